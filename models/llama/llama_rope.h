// The RoPE frequencies of a Llama config: theta, then llama3 scaling or explicit factors.
#pragma once

#include <vector>

#include "models/llama/llama_config.h"

namespace speclab {

// inv_freq: [head_dim/2]. inv_freq_i = theta^(-2i/head_dim), then
//   divided by rope_freq_factors[i] when those are given (GGUF rope_freqs.weight), else
//   rescaled by rope_scaling when enabled (HF rope_type "llama3").
std::vector<float> llama_rope_inv_freq(const LlamaConfig& config);

}  // namespace speclab
