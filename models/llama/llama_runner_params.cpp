#include "models/llama/llama_runner_params.h"

#include "core/dtype.h"
#include "core/error.h"
#include "models/llama/llama_rope.h"

namespace speclab {
namespace {

void check_matrix(const TensorView& w, int64_t rows, int64_t cols, const char* what) {
  SPECLAB_INPUT_CHECK(
      w.data != nullptr && w.shape.size() == 2 && w.shape[0] == rows && w.shape[1] == cols,
      "tensor '", w.name, "' (", what, "): expected shape [", rows, ", ", cols, "]");
}

std::vector<float> norm_to_f32(const TensorView& w, int64_t dim, const char* what) {
  SPECLAB_INPUT_CHECK(w.data != nullptr && w.numel() == dim, "tensor '", w.name, "' (", what,
                      "): expected ", dim, " values");
  std::vector<float> out(dim);
  dtype_to_f32(w.dtype, w.data, out.data(), dim);
  return out;
}

}  // namespace

LlamaRunnerParams llama_runner_params_make(const LlamaModel& model,
                                           const std::vector<bool>& skip_layers) {
  const LlamaConfig& c = model.config;
  const LlamaWeights& w = model.weights;
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  LlamaRunnerParams p;
  check_matrix(w.tok_embeddings, c.vocab_size, c.dim, "token embeddings");
  check_matrix(w.output, c.vocab_size, c.dim, "output");
  p.final_norm = norm_to_f32(w.final_norm, c.dim, "final norm");
  p.attn_norm.resize(c.n_layers);
  p.ffn_norm.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers[l]) continue;
    const LlamaLayerWeights& lw = w.layers[l];
    check_matrix(lw.wq, q_dim, c.dim, "wq");
    check_matrix(lw.wk, kv_dim, c.dim, "wk");
    check_matrix(lw.wv, kv_dim, c.dim, "wv");
    check_matrix(lw.wo, c.dim, q_dim, "wo");
    check_matrix(lw.w_gate, c.hidden_dim, c.dim, "w_gate");
    check_matrix(lw.w_up, c.hidden_dim, c.dim, "w_up");
    check_matrix(lw.w_down, c.dim, c.hidden_dim, "w_down");
    p.attn_norm[l] = norm_to_f32(lw.attn_norm, c.dim, "attention norm");
    p.ffn_norm[l] = norm_to_f32(lw.ffn_norm, c.dim, "ffn norm");
  }
  p.inv_freq = llama_rope_inv_freq(c);
  p.rope_interleaved = c.rope_pairing == RopePairing::kInterleaved;
  return p;
}

}  // namespace speclab
