#include "models/llama/batched_llama_runner.h"

#include <algorithm>

#include "core/cpu_attention.h"
#include "core/cpu_matmul.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
#include "core/error.h"
#include "models/llama/batch_rows.h"
#include "models/llama/token_runner.h"

namespace speclab {

BatchedLlamaRunner::BatchedLlamaRunner(const LlamaModel& model, int64_t n_slots, int64_t max_ctx)
    : model_(model) {
  const LlamaConfig& c = model.config;
  SPECLAB_INPUT_CHECK(n_slots >= 1, "batched runner: n_slots ", n_slots, " must be >= 1");
  std::vector<bool> no_skip;
  max_ctx_ = token_runner_check_setup(model, max_ctx, &no_skip);
  books_.assign(static_cast<size_t>(n_slots),
                kv_cache_book_make(max_ctx_, c.n_kv_heads, c.head_dim));
  kv_dim_ = c.n_kv_heads * c.head_dim;

  params_ = llama_runner_params_make(model, no_skip);
  key_cache_.resize(c.n_layers);
  value_cache_.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    // [n_slots, max_ctx, kv_dim]; new float[] without () leaves the pages untouched until
    // written, so unused slots and positions cost address space only.
    key_cache_[l].reset(new float[n_slots * max_ctx_ * kv_dim_]);
    value_cache_[l].reset(new float[n_slots * max_ctx_ * kv_dim_]);
  }
}

int64_t BatchedLlamaRunner::n_past(int64_t slot) const {
  batch_rows_check_slot(books_, slot);
  return books_[slot].n_past;
}

size_t BatchedLlamaRunner::kv_cache_bytes() const {
  return kv_cache_bytes_for(model_.config, n_slots(), max_ctx_);
}

size_t BatchedLlamaRunner::kv_cache_bytes_for(const LlamaConfig& c, int64_t n_slots,
                                              int64_t max_ctx) {
  return 2 * sizeof(float) *
         static_cast<size_t>(c.n_layers * n_slots * max_ctx * c.n_kv_heads * c.head_dim);
}

void BatchedLlamaRunner::truncate(int64_t slot, int64_t n) {
  batch_rows_check_truncate(books_, slot, n);
  KvCacheBook& book = books_[slot];
  const int64_t keep = rollback_keep(slot, n);
  SPECLAB_ASSERT(keep >= 0 && keep <= book.n_past);
  book.truncate(keep);
}

void BatchedLlamaRunner::ensure_batch_capacity(int64_t n_rows) {
  if (n_rows <= batch_capacity_) return;
  const LlamaConfig& c = model_.config;
  const int64_t q_dim = c.n_heads * c.head_dim;
  x_.resize(n_rows * c.dim);
  xb_.resize(n_rows * c.dim);
  xb2_.resize(n_rows * c.dim);
  q_.resize(n_rows * q_dim);
  k_.resize(n_rows * kv_dim_);
  v_.resize(n_rows * kv_dim_);
  att_.resize(n_rows * q_dim);
  hb_.resize(n_rows * c.hidden_dim);
  hb2_.resize(n_rows * c.hidden_dim);
  batch_capacity_ = n_rows;
}

const float* BatchedLlamaRunner::forward_batch(const BatchRow* rows, int64_t n_rows,
                                               bool last_only) {
  const LlamaConfig& c = model_.config;
  const LlamaWeights& w = model_.weights;

  // Check everything before changing anything: slots, grouping, tokens, each slot's room.
  batch_rows_plan(rows, n_rows, books_, c.vocab_size, max_ctx_, &plan_);
  const std::vector<int64_t>& count = plan_.count;
  const std::vector<int64_t>& positions = plan_.positions;
  const std::vector<int64_t>& group_end = plan_.group_end;

  ensure_batch_capacity(n_rows);
  tokens_.resize(n_rows);
  row_slot_.resize(n_rows);
  attn_slot_.resize(n_rows);
  for (int64_t r = 0; r < n_rows; r++) {
    const int64_t s = rows[r].slot;
    tokens_[r] = rows[r].token;
    row_slot_[r] = s;
    attn_slot_[r] = attention_cache_slot(s);
  }

  const int64_t dim = c.dim, head_dim = c.head_dim, n_heads = c.n_heads;
  const int64_t n_kv_heads = c.n_kv_heads, q_dim = n_heads * head_dim;
  float* x = x_.data();
  int64_t longest = 0;  // the longest context of any row
  for (int64_t r = 0; r < n_rows; r++) longest = std::max(longest, positions[r] + 1);

  // Token embeddings: one row of tok_embeddings per row, converted to FP32.
  for (int64_t r = 0; r < n_rows; r++)
    weights_row_to_f32(x + r * dim, w.tok_embeddings, tokens_[r]);

  for (int64_t l = 0; l < c.n_layers; l++) {
    const LlamaLayerWeights& lw = w.layers[l];
    float* key_cache = key_cache_[l].get();
    float* value_cache = value_cache_[l].get();

    // Attention sublayer: x += wo · attention(rope(wq·xb), rope(wk·xb), wv·xb), the three
    // projections once over all rows of all slots.
    rmsnorm(xb_.data(), x, params_.attn_norm[l].data(), n_rows, dim, c.rms_norm_eps);
    matmul_weights(q_.data(), xb_.data(), lw.wq, n_rows);
    matmul_weights(k_.data(), xb_.data(), lw.wk, n_rows);
    matmul_weights(v_.data(), xb_.data(), lw.wv, n_rows);
    // RoPE at each row's own position (bit-identical to rope_apply at equal positions).
    rope_apply_positions(q_.data(), n_rows, n_heads, head_dim, positions.data(),
                         params_.inv_freq.data(), params_.rope_interleaved);
    rope_apply_positions(k_.data(), n_rows, n_kv_heads, head_dim, positions.data(),
                         params_.inv_freq.data(), params_.rope_interleaved);
    // Scatter the new K/V rows into their slots' caches: [n_rows, kv_dim] -> (slot, position).
    for (int64_t r = 0; r < n_rows; r++) {
      const int64_t off = cache_offset(row_slot_[r], positions[r]);
      std::copy_n(k_.data() + r * kv_dim_, kv_dim_, key_cache + off);
      std::copy_n(v_.data() + r * kv_dim_, kv_dim_, value_cache + off);
    }
    // Attention of each (row, head) over its slot's cache, positions [0, position]: causal
    // within the slot's new rows, blind to every other slot. attention_item with t = 0 and
    // n_past = position reads exactly that context, as LlamaRunner's query at that position.
    // Work items: (row, attention_item), a KV group's query heads together on the AVX-512 path.
    const int64_t per_row = attention_items_per_token(n_heads, n_kv_heads);
    const int64_t n_work = n_rows * per_row;
    const bool parallel = n_rows * n_heads * longest * head_dim >= (int64_t{1} << 16);
#pragma omp parallel if (parallel)
    {
      std::vector<float> scores(attention_item_scores(longest));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n_work; i++) {
        const int64_t r = i / per_row, item = i % per_row;
        const int64_t s = attn_slot_[r];
        attention_item(att_.data() + r * q_dim, q_.data() + r * q_dim,
                       key_cache + cache_offset(s, 0), value_cache + cache_offset(s, 0), /*t=*/0,
                       item, positions[r], n_heads, n_kv_heads, head_dim, scores.data());
      }
    }
    matmul_weights(xb2_.data(), att_.data(), lw.wo, n_rows);
    add_inplace(x, xb2_.data(), n_rows * dim);

    // MLP sublayer: x += w_down · (silu(w_gate·xb) * (w_up·xb)).
    rmsnorm(xb_.data(), x, params_.ffn_norm[l].data(), n_rows, dim, c.rms_norm_eps);
    matmul_weights(hb_.data(), xb_.data(), lw.w_gate, n_rows);
    matmul_weights(hb2_.data(), xb_.data(), lw.w_up, n_rows);
    swiglu(hb_.data(), hb_.data(), hb2_.data(), n_rows * c.hidden_dim);
    matmul_weights(xb2_.data(), hb_.data(), lw.w_down, n_rows);
    add_inplace(x, xb2_.data(), n_rows * dim);
  }

  // Final norm and the output head, over all rows or each group's last row.
  const int64_t n_groups = static_cast<int64_t>(group_end.size());
  const int64_t n_out = last_only ? n_groups : n_rows;
  if (last_only) {
    for (int64_t g = 0; g < n_groups; g++)
      rmsnorm(xb_.data() + g * dim, x + (group_end[g] - 1) * dim, params_.final_norm.data(), 1, dim,
              c.rms_norm_eps);
  } else {
    rmsnorm(xb_.data(), x, params_.final_norm.data(), n_rows, dim, c.rms_norm_eps);
  }
  if (static_cast<int64_t>(logits_.size()) < n_out * c.vocab_size) {
    logits_.resize(n_out * c.vocab_size);
  }
  matmul_weights(logits_.data(), xb_.data(), w.output, n_out);

  // Commit: each slot's rows now occupy positions [n_past, n_past + count).
  for (size_t s = 0; s < books_.size(); s++) {
    if (count[s] > 0) books_[s].commit_linear(count[s]);
  }
  return logits_.data();
}

}  // namespace speclab
