// Who a model is, for result rows: the spec as written, sha256 of its weight files,
// parameter count, dtypes. Hashing reads the files once (about 0.2 s per 100 MB); the
// result is cached per path for the life of the process.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/llama/llama_model.h"

namespace speclab {

// sha256 (hex) of a file's bytes; InputError if unreadable.
std::string file_sha256(const std::string& path);

// {spec, format, sha256, parameters, dtypes, weight_bytes_per_token, layers, dim, vocab}.
// sha256 covers the weight files: the .gguf (also when a directory holding it was named), or
// the directory's *.safetensors in name order;
// "synthetic" models are identified by their spec alone.
nlohmann::json model_identity(const std::string& spec, const std::string& resolved_path,
                              const LlamaModel& model);

}  // namespace speclab
