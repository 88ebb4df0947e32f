// What a CPU runner derives from a LlamaModel once, before its first forward: the weight
// shapes checked, the norm weights converted to FP32, the RoPE frequencies and pairing.
// LlamaRunner (one sequence) and BatchedLlamaRunner (many) share it, so that both read the
// same FP32 norms and inv_freq and their logits stay bit-identical.
#pragma once

#include <vector>

#include "models/llama/llama_model.h"

namespace speclab {

struct LlamaRunnerParams {
  // Norm weights in FP32 (HF BF16 checkpoints store them in BF16); empty for skipped layers.
  std::vector<std::vector<float>> attn_norm;  // [n_layers][dim]
  std::vector<std::vector<float>> ffn_norm;   // [n_layers][dim]
  std::vector<float> final_norm;              // [dim]
  std::vector<float> inv_freq;                // [head_dim/2]  llama_rope_inv_freq
  bool rope_interleaved = false;              // RopePairing::kInterleaved (GGUF) vs halves (HF)
};

// Checks the shape of every matrix the forward reads (token embeddings, output, and the
// seven matrices of each layer not marked in skip_layers, size n_layers) and converts the
// norms. A wrong shape or norm length throws InputError naming the tensor and the shape
// expected.
LlamaRunnerParams llama_runner_params_make(const LlamaModel& model,
                                           const std::vector<bool>& skip_layers);

}  // namespace speclab
