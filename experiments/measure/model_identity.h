// Who a model is, for result rows: the spec as written, sha256 of its weight files,
// parameter count, dtypes. Hashing reads the files once (about 0.2 s per 100 MB); the
// result is cached per path for the life of the process.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "models/llama/llama_model.h"

namespace speclab {

// sha256 (hex) of a file's bytes; InputError if unreadable.
std::string file_sha256(const std::string& path);

// A model's identity. A drafter without a model (lookup, n-gram) has only its name, spec and
// kind; the other fields are then unset.
struct ModelIdentity {
  std::string name;  // drafters: the name in the config
  std::string spec;  // as the config wrote it
  std::string kind;  // drafters: deterministic | sampled
  std::optional<std::string> format, sha256;
  std::optional<int64_t> parameters, weight_bytes_per_token, layers, dim, vocab;
  std::optional<std::map<std::string, int64_t>> dtypes;  // dtype name -> tensor count
};

// sha256 covers the weight files: the .gguf (also when a directory holding it was named), or
// the directory's *.safetensors in name order;
// "synthetic" models are identified by their spec alone.
ModelIdentity model_identity(const std::string& spec, const std::string& resolved_path,
                             const LlamaModel& model);

}  // namespace speclab
