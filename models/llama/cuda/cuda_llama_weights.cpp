#include "models/llama/cuda/cuda_llama_weights.h"

#include "core/cuda/cuda_check.h"
#include "core/error.h"
#include "models/llama/llama_rope.h"

namespace speclab {
namespace {

CudaWeight upload_matrix(const TensorView& w, int64_t rows, int64_t cols, const char* what) {
  SPECLAB_INPUT_CHECK(
      w.data != nullptr && w.shape.size() == 2 && w.shape[0] == rows && w.shape[1] == cols,
      "tensor '", w.name, "' (", what, "): expected shape [", rows, ", ", cols, "]");
  return cuda_weight_upload(w);
}

CudaBuffer<float> upload_norm(const TensorView& w, int64_t dim, const char* what) {
  SPECLAB_INPUT_CHECK(w.data != nullptr && w.numel() == dim, "tensor '", w.name, "' (", what,
                      "): expected ", dim, " values");
  std::vector<float> host(dim);
  dtype_to_f32(w.dtype, w.data, host.data(), dim);
  CudaBuffer<float> out;
  out.upload(host.data(), dim);
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(nullptr), "norm upload failed");
  return out;
}

}  // namespace

CudaLlamaWeights cuda_llama_weights_upload(const LlamaModel& model,
                                           const std::vector<bool>& skip_layers) {
  const LlamaConfig& c = model.config;
  const LlamaWeights& w = model.weights;
  SPECLAB_ASSERT(static_cast<int64_t>(skip_layers.size()) == c.n_layers);
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  CudaLlamaWeights d;
  d.tok_embeddings = upload_matrix(w.tok_embeddings, c.vocab_size, c.dim, "token embeddings");
  d.output_is_embeddings =
      w.output.data == w.tok_embeddings.data && w.output.dtype == w.tok_embeddings.dtype;
  if (!d.output_is_embeddings) d.output = upload_matrix(w.output, c.vocab_size, c.dim, "output");
  d.final_norm = upload_norm(w.final_norm, c.dim, "final norm");
  d.layers.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers[l]) continue;
    const LlamaLayerWeights& lw = w.layers[l];
    CudaLlamaLayerWeights& dl = d.layers[l];
    dl.wq = upload_matrix(lw.wq, q_dim, c.dim, "wq");
    dl.wk = upload_matrix(lw.wk, kv_dim, c.dim, "wk");
    dl.wv = upload_matrix(lw.wv, kv_dim, c.dim, "wv");
    dl.wo = upload_matrix(lw.wo, c.dim, q_dim, "wo");
    dl.w_gate = upload_matrix(lw.w_gate, c.hidden_dim, c.dim, "w_gate");
    dl.w_up = upload_matrix(lw.w_up, c.hidden_dim, c.dim, "w_up");
    dl.w_down = upload_matrix(lw.w_down, c.dim, c.hidden_dim, "w_down");
    dl.attn_norm = upload_norm(lw.attn_norm, c.dim, "attention norm");
    dl.ffn_norm = upload_norm(lw.ffn_norm, c.dim, "ffn norm");
  }
  const std::vector<float> inv_freq = llama_rope_inv_freq(c);
  d.inv_freq.upload(inv_freq.data(), inv_freq.size());
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(nullptr), "rope frequency upload failed");
  d.rope_interleaved = c.rope_pairing == RopePairing::kInterleaved;
  return d;
}

}  // namespace speclab
