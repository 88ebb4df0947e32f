// A loaded Llama model: config, weight views, tokenizer, and the storage they point into.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/llama/llama_config.h"
#include "models/llama/llama_weights.h"
#include "models/tokenizer/tokenizer.h"

namespace speclab {

struct LlamaModel {
  std::string path;    // as given by the user
  std::string format;  // "hf", "gguf", "synthetic"
  LlamaConfig config;
  LlamaWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;  // may be null for synthetic models
  // Keeps mmaps and owned buffers alive for as long as the views in `weights` are used.
  std::vector<std::shared_ptr<void>> storage;
  // The weight files' bytes copied into huge pages, not mapped (core/mapped_file.h: a file the
  // page cache holds in 4 KB folios). False for synthetic models (their own huge pages).
  bool weights_copied = false;

  int64_t parameter_count() const;
  // Bytes of weights read by one decode step (all matrices + norms, embeddings row excluded).
  int64_t weight_bytes_per_token() const;
};

// Loads a model from
//   a directory with config.json + model.safetensors (or shards + model.safetensors.index.json)
//     + tokenizer.json or tokenizer.model,
//   a .gguf file (llama architecture), or a directory without safetensors that holds exactly
//     one .gguf file (that file; more than one, or none, is an InputError naming the directory),
//     or
//   "synthetic:<shape>[:dtype]" (seeded random weights in a real model's shapes; timing only).
// Bad files throw InputError naming the file and what was wrong.
std::unique_ptr<LlamaModel> llama_load(const std::string& path);

}  // namespace speclab
