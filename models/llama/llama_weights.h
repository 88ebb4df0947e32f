// The weights of a Llama model as views into the model file (mmap) or into owned
// buffers (synthetic models). Every matrix is [out_features, in_features], row-major,
// in the HF naming order; dtypes may differ per tensor (a GGUF mixes Q4_1 and F32).
#pragma once

#include <memory>
#include <vector>

#include "core/tensor_view.h"
#include "models/llama/llama_config.h"

namespace speclab {

struct LlamaLayerWeights {
  TensorView attn_norm;  // [dim]                      input_layernorm
  TensorView wq;         // [n_heads*head_dim, dim]    q_proj
  TensorView wk;         // [n_kv_heads*head_dim, dim] k_proj
  TensorView wv;         // [n_kv_heads*head_dim, dim] v_proj
  TensorView wo;         // [dim, n_heads*head_dim]    o_proj
  TensorView ffn_norm;   // [dim]                      post_attention_layernorm
  TensorView w_gate;     // [hidden_dim, dim]          gate_proj
  TensorView w_up;       // [hidden_dim, dim]          up_proj
  TensorView w_down;     // [dim, hidden_dim]          down_proj
};

struct LlamaWeights {
  TensorView tok_embeddings;  // [vocab, dim]          embed_tokens
  std::vector<LlamaLayerWeights> layers;
  TensorView final_norm;  // [dim]                 norm
  TensorView output;      // [vocab, dim]          lm_head, or tok_embeddings when tied
};

// Calls f on every weight view of w (W: LlamaWeights, const or not), the embedding table first
// and the output matrix last (it may alias tok_embeddings: callers that count storage dedup by
// data pointer).
template <typename W, typename F>
void llama_for_each_weight(W& w, F&& f) {
  f(w.tok_embeddings);
  for (auto& l : w.layers) {
    for (auto* t :
         {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down})
      f(*t);
  }
  f(w.final_norm);
  f(w.output);
}

}  // namespace speclab
