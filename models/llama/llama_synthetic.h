// Seeded random weights in the exact shapes of real models, for timing and tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "models/llama/llama_model.h"

namespace speclab {

// A random model with the given config; matrices in `dtype`, norms in F32. Owned buffers
// live in model->storage. No tokenizer. Weights ~ N(0, 1/sqrt(in_features)) so activations
// stay O(1) through many layers.
std::unique_ptr<LlamaModel> llama_make_random(const LlamaConfig& config, DType dtype,
                                              uint64_t seed);

// spec = "<shape>[:<dtype>]" where shape is one of llama-3.2-1b, llama-3.2-3b,
// smollm2-135m, smollm2-360m, smollm2-1.7b, tiny (a few-layer test model); dtype defaults
// to BF16. Used by llama_load for paths "synthetic:<spec>". Unknown shape -> InputError
// listing the known ones.
std::unique_ptr<LlamaModel> llama_make_synthetic(const std::string& spec, uint64_t seed = 1234);

// The config of a named synthetic shape (no weights built); unknown shape -> InputError.
LlamaConfig llama_synthetic_config(const std::string& shape);

}  // namespace speclab
