#include "models/llama/llama_forward.h"

#include <algorithm>

#include "core/cpu_attention.h"
#include "core/cpu_matmul.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
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

LlamaRunner::LlamaRunner(const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip_layers)
    : model_(model), skip_layers_(std::move(skip_layers)) {
  const LlamaConfig& c = model.config;
  const LlamaWeights& w = model.weights;
  kv_ = kv_cache_book_make(token_runner_check_setup(model, max_ctx, &skip_layers_), c.n_kv_heads,
                           c.head_dim);

  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  check_matrix(w.tok_embeddings, c.vocab_size, c.dim, "token embeddings");
  check_matrix(w.output, c.vocab_size, c.dim, "output");
  final_norm_ = norm_to_f32(w.final_norm, c.dim, "final norm");
  attn_norm_.resize(c.n_layers);
  ffn_norm_.resize(c.n_layers);
  key_cache_.resize(c.n_layers);
  value_cache_.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    const LlamaLayerWeights& lw = w.layers[l];
    check_matrix(lw.wq, q_dim, c.dim, "wq");
    check_matrix(lw.wk, kv_dim, c.dim, "wk");
    check_matrix(lw.wv, kv_dim, c.dim, "wv");
    check_matrix(lw.wo, c.dim, q_dim, "wo");
    check_matrix(lw.w_gate, c.hidden_dim, c.dim, "w_gate");
    check_matrix(lw.w_up, c.hidden_dim, c.dim, "w_up");
    check_matrix(lw.w_down, c.dim, c.hidden_dim, "w_down");
    attn_norm_[l] = norm_to_f32(lw.attn_norm, c.dim, "attention norm");
    ffn_norm_[l] = norm_to_f32(lw.ffn_norm, c.dim, "ffn norm");
    // new float[] without () leaves the pages untouched until written.
    key_cache_[l].reset(new float[kv_.layer_floats()]);
    value_cache_[l].reset(new float[kv_.layer_floats()]);
  }
  inv_freq_ = llama_rope_inv_freq(c);
  slot_position_.assign(static_cast<size_t>(kv_.max_ctx), 0);
  slot_parent_.assign(static_cast<size_t>(kv_.max_ctx), -1);
  rope_interleaved_ = c.rope_pairing == RopePairing::kInterleaved;
}

void LlamaRunner::ensure_batch_capacity(int64_t n_tokens) {
  if (n_tokens <= batch_capacity_) return;
  const LlamaConfig& c = model_.config;
  const int64_t q_dim = c.n_heads * c.head_dim;
  x_.resize(n_tokens * c.dim);
  xb_.resize(n_tokens * c.dim);
  xb2_.resize(n_tokens * c.dim);
  q_.resize(n_tokens * q_dim);
  att_.resize(n_tokens * q_dim);
  hb_.resize(n_tokens * c.hidden_dim);
  hb2_.resize(n_tokens * c.hidden_dim);
  batch_capacity_ = n_tokens;
}

const float* LlamaRunner::forward(const int32_t* tokens, int64_t n_tokens, bool last_only) {
  kv_.check_append(tokens, n_tokens, model_.config.vocab_size);
  SPECLAB_ASSERT(!kv_.has_tree());  // a tree is pending: keep_path/truncate first
  const int64_t n_past = kv_.n_past;
  for (int64_t t = 0; t < n_tokens; t++) {
    slot_position_[n_past + t] = n_past + t;
    slot_parent_[n_past + t] = n_past + t - 1;
  }
  const float* logits = run(tokens, n_tokens, last_only, nullptr);
  kv_.commit_linear(n_tokens);
  return logits;
}

const float* LlamaRunner::forward_tree(const int32_t* tokens, const int32_t* parent_slot,
                                       int64_t n_tokens) {
  kv_.check_append(tokens, n_tokens, model_.config.vocab_size);
  // Per node: position, and the context it reads: the linear prefix up to its first
  // linear ancestor, then its tree ancestors and itself in ascending slot order.
  std::vector<int64_t> positions(n_tokens), prefix_len(n_tokens), offset(n_tokens + 1, 0);
  std::vector<int64_t> extra;  // concatenated ascending slot lists
  std::vector<int64_t> chain;
  for (int64_t i = 0; i < n_tokens; i++) {
    const int64_t slot = kv_.n_past + i;
    const int64_t parent = parent_slot[i];
    SPECLAB_INPUT_CHECK(parent >= -1 && parent < slot, "forward_tree: node ", i,
                        " has parent slot ", parent, ", expected -1..", slot - 1);
    slot_parent_[slot] = parent;
    slot_position_[slot] = parent < 0 ? 0 : slot_position_[parent] + 1;
    positions[i] = slot_position_[slot];
    chain.clear();
    int64_t s = slot;
    while (s >= kv_.linear_len) {  // tree slots, walking up to the linear sequence
      chain.push_back(s);
      s = slot_parent_[s];
    }
    prefix_len[i] = s + 1;  // s = -1 or the linear ancestor
    extra.insert(extra.end(), chain.rbegin(), chain.rend());
    offset[i + 1] = static_cast<int64_t>(extra.size());
  }
  const TreeBatch tree{positions.data(), prefix_len.data(), offset.data(), extra.data()};
  const float* logits = run(tokens, n_tokens, /*last_only=*/false, &tree);
  kv_.commit_tree(n_tokens);
  return logits;
}

void LlamaRunner::keep_path(int64_t base, const int32_t* path, int64_t n) {
  SPECLAB_ASSERT(base == kv_.linear_len && n >= 0 && base + n <= kv_.n_past);
  const LlamaConfig& c = model_.config;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  int64_t prev = base - 1;
  for (int64_t j = 0; j < n; j++) {
    const int64_t from = path[j];
    SPECLAB_ASSERT(from >= base + j && from < kv_.n_past && slot_parent_[from] == prev);
    prev = from;
    const int64_t to = base + j;  // to <= from and later sources lie above from: no overlap
    if (from != to) {
      for (int64_t l = 0; l < c.n_layers; l++) {
        if (skip_layers_[l]) continue;
        std::copy_n(key_cache_[l].get() + from * kv_dim, kv_dim, key_cache_[l].get() + to * kv_dim);
        std::copy_n(value_cache_[l].get() + from * kv_dim, kv_dim,
                    value_cache_[l].get() + to * kv_dim);
      }
    }
    slot_position_[to] = to;
    slot_parent_[to] = to - 1;
  }
  kv_.keep_path(base, n);
}

const float* LlamaRunner::run(const int32_t* tokens, int64_t n_tokens, bool last_only,
                              const TreeBatch* tree) {
  const LlamaConfig& c = model_.config;
  const LlamaWeights& w = model_.weights;
  ensure_batch_capacity(n_tokens);
  const int64_t dim = c.dim;
  const int64_t n_past = kv_.n_past;
  float* x = x_.data();

  // Token embeddings: one row of tok_embeddings per token, converted to FP32.
  for (int64_t t = 0; t < n_tokens; t++)
    weights_row_to_f32(x + t * dim, w.tok_embeddings, tokens[t]);

  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    const LlamaLayerWeights& lw = w.layers[l];
    float* key_cache = key_cache_[l].get();
    float* value_cache = value_cache_[l].get();
    // The new tokens' K/V rows go straight into the cache: [n_tokens, n_kv_heads, head_dim].
    float* k_new = key_cache + kv_.row_offset(n_past);
    float* v_new = value_cache + kv_.row_offset(n_past);

    // Attention sublayer: x += wo · attention(rope(wq·xb), rope(wk·xb), wv·xb).
    rmsnorm(xb_.data(), x, attn_norm_[l].data(), n_tokens, dim, c.rms_norm_eps);
    matmul_weights(q_.data(), xb_.data(), lw.wq, n_tokens);
    matmul_weights(k_new, xb_.data(), lw.wk, n_tokens);
    matmul_weights(v_new, xb_.data(), lw.wv, n_tokens);
    if (tree) {
      rope_apply_positions(q_.data(), n_tokens, c.n_heads, c.head_dim, tree->positions,
                           inv_freq_.data(), rope_interleaved_);
      rope_apply_positions(k_new, n_tokens, c.n_kv_heads, c.head_dim, tree->positions,
                           inv_freq_.data(), rope_interleaved_);
      attention_tree(att_.data(), q_.data(), key_cache, value_cache, n_tokens, tree->prefix_len,
                     tree->extra_offset, tree->extra_slots, c.n_heads, c.n_kv_heads, c.head_dim);
    } else {
      rope_apply(q_.data(), n_tokens, c.n_heads, c.head_dim, n_past, inv_freq_.data(),
                 rope_interleaved_);
      rope_apply(k_new, n_tokens, c.n_kv_heads, c.head_dim, n_past, inv_freq_.data(),
                 rope_interleaved_);
      attention(att_.data(), q_.data(), key_cache, value_cache, n_tokens, n_past, c.n_heads,
                c.n_kv_heads, c.head_dim);
    }
    matmul_weights(xb2_.data(), att_.data(), lw.wo, n_tokens);
    add_inplace(x, xb2_.data(), n_tokens * dim);

    // MLP sublayer: x += w_down · (silu(w_gate·xb) * (w_up·xb)).
    rmsnorm(xb_.data(), x, ffn_norm_[l].data(), n_tokens, dim, c.rms_norm_eps);
    matmul_weights(hb_.data(), xb_.data(), lw.w_gate, n_tokens);
    matmul_weights(hb2_.data(), xb_.data(), lw.w_up, n_tokens);
    swiglu(hb_.data(), hb_.data(), hb2_.data(), n_tokens * c.hidden_dim);
    matmul_weights(xb2_.data(), hb_.data(), lw.w_down, n_tokens);
    add_inplace(x, xb2_.data(), n_tokens * dim);
  }

  // Final norm and the output head, over all tokens or only the last one.
  const int64_t n_rows = last_only ? 1 : n_tokens;
  const float* head_in = x + (n_tokens - n_rows) * dim;
  rmsnorm(xb_.data(), head_in, final_norm_.data(), n_rows, dim, c.rms_norm_eps);
  if (static_cast<int64_t>(logits_.size()) < n_rows * c.vocab_size) {
    logits_.resize(n_rows * c.vocab_size);
  }
  matmul_weights(logits_.data(), xb_.data(), w.output, n_rows);
  return logits_.data();
}

void LlamaRunner::truncate(int64_t n) { kv_.truncate(n); }

}  // namespace speclab
