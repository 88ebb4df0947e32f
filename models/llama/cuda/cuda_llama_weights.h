// A Llama model's weights on the device, uploaded once: shared by CudaLlamaRunner (one
// sequence) and CudaBatchedLlamaRunner (many), so both read the same device copies in the same
// layout. Matrices are stored as in the model (any DType), norms and RoPE frequencies as F32.
#pragma once

#include <vector>

#include "core/cuda/cuda_buffer.h"
#include "core/cuda/cuda_weights.h"
#include "models/llama/llama_model.h"

namespace speclab {

struct CudaLlamaLayerWeights {
  CudaWeight wq, wk, wv, wo, w_gate, w_up, w_down;
  CudaBuffer<float> attn_norm, ffn_norm;  // [dim] each
};

struct CudaLlamaWeights {
  CudaWeight tok_embeddings;  // [vocab, dim]
  CudaWeight output;          // [vocab, dim]; empty when it shares tok_embeddings
  bool output_is_embeddings = false;
  CudaBuffer<float> final_norm;  // [dim]
  CudaBuffer<float> inv_freq;    // [head_dim/2]
  bool rope_interleaved = false;
  std::vector<CudaLlamaLayerWeights> layers;  // [n_layers]; a skipped layer stays empty

  // The output head (the embeddings when tied).
  CudaWeightView head() const {
    return output_is_embeddings ? tok_embeddings.view() : output.view();
  }
};

// Uploads every used matrix of `model` (skip_layers[l]: layer l is neither uploaded nor used;
// [n_layers], as token_runner_check_setup fills it). Synchronous. Throws InputError for a
// tensor of the wrong shape, CudaError when the device is missing or out of memory.
CudaLlamaWeights cuda_llama_weights_upload(const LlamaModel& model,
                                           const std::vector<bool>& skip_layers);

}  // namespace speclab
