// The Llama forward pass over several sequences at once: S sequence slots, each with its own
// KV cache and KvCacheBook, served by one forward per step (continuous batching).
//
// A server verifying b requests x k draft tokens runs them as one batch: the weight matrices
// are read once per forward (one matmul_weights over all rows of all requests, which is what
// makes batching pay on a memory-bound machine), while attention stays per request, over the
// request's own cache up to the row's own position. This is the batch of vLLM's continuous
// batching (Kwon et al., "Efficient Memory Management for Large Language Model Serving with
// PagedAttention", 2023) and of llama.cpp's llama_batch: a batch is a list of rows, each
// carrying its sequence; a row's position is its slot's n_past plus its index among that
// slot's rows in the batch. The cache here is a fixed [max_ctx] region per slot, not paged.
//
// Each row's logits are bit-identical to those of the same tokens run through a LlamaRunner
// holding that slot's sequence alone: matmul_weights is batch invariant (one thread reduces
// each output in a fixed order whatever the batch), RMSNorm, RoPE and SwiGLU are per row, and
// attention uses attention_one over the slot's cache with the row's own context length
// (tests/llama/test_batched_forward.cpp checks this on every matmul path the CPU has).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kv_cache_book.h"
#include "models/llama/batch_rows.h"
#include "models/llama/batch_token_runner.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner_params.h"

namespace speclab {

class BatchedLlamaRunner : public BatchTokenRunner {
 public:
  // n_slots >= 1 sequences of up to max_ctx positions each (max_ctx = 0 ->
  // min(config.max_seq_len, 4096)). The whole cache is allocated up front:
  // kv_cache_bytes() = n_slots * max_ctx * n_layers * 2 (K and V) * n_kv_heads * head_dim * 4
  // bytes, e.g. Llama-3.2 1B (16 layers, 8 KV heads of 64): 64 KiB per position, so
  // 4 slots x 4096 positions = 1 GiB (pages are touched only when written). The model must
  // outlive the runner. Bad shapes or n_slots < 1 throw InputError.
  BatchedLlamaRunner(const LlamaModel& model, int64_t n_slots, int64_t max_ctx = 0);

  // Runs rows[0..n_rows): each slot's rows must be consecutive in `rows` (grouped per slot,
  // a slot at most once), and are appended in order at positions [n_past(slot),
  // n_past(slot) + count). Returns logits [n_rows, vocab] row-major in row order, or, if
  // last_only, one row per slot group [n_groups, vocab] (each group's last row, in group
  // order); valid until the next call. An unknown slot, a slot's rows split in two groups, a
  // token outside the vocabulary, n_rows < 1, or a slot's n_past + count > max_ctx throws
  // InputError and leaves every slot unchanged.
  const float* forward_batch(const BatchRow* rows, int64_t n_rows, bool last_only = false) override;
  using BatchTokenRunner::forward_batch;

  // O(1) rollback of one slot: forgets its positions >= n (0 <= n <= n_past(slot)); its next
  // rows start at position n. Other slots are untouched. Bad slot or n: InputError, no change.
  void truncate(int64_t slot, int64_t n) override;

  int64_t n_slots() const override { return static_cast<int64_t>(books_.size()); }
  int64_t n_past(int64_t slot) const override;
  int64_t max_ctx() const override { return max_ctx_; }
  int64_t vocab() const override { return model_.config.vocab_size; }
  size_t kv_cache_bytes() const;
  // kv_cache_bytes() of a runner for `config` with n_slots slots of max_ctx positions (the
  // memory check before any cache is allocated).
  static size_t kv_cache_bytes_for(const LlamaConfig& config, int64_t n_slots, int64_t max_ctx);
  const LlamaModel& model() const { return model_; }

  virtual ~BatchedLlamaRunner() = default;

 protected:
  // Seams for the planted bugs of tests/llama/test_batched_forward.cpp (a test-only subclass
  // overrides them to prove the comparison there can fail; the product never does). Each is
  // called once per row or per truncate, never inside the attention loop.
  //   attention_cache_slot: the slot whose cache a row of slot row_slot attends over.
  //   rollback_keep: the positions truncate(slot, n) keeps, in [0, n_past(slot)].
  virtual int64_t attention_cache_slot(int64_t row_slot) const { return row_slot; }
  virtual int64_t rollback_keep(int64_t slot, int64_t n) const { return n; }

 private:
  void ensure_batch_capacity(int64_t n_rows);
  // Float offset of (slot, position) inside a layer's K or V buffer.
  int64_t cache_offset(int64_t slot, int64_t pos) const {
    return (slot * max_ctx_ + pos) * kv_dim_;
  }

  const LlamaModel& model_;
  int64_t max_ctx_ = 0;
  int64_t kv_dim_ = 0;              // n_kv_heads * head_dim
  std::vector<KvCacheBook> books_;  // [n_slots]  n_past and rollback per slot
  LlamaRunnerParams params_;        // FP32 norms, inv_freq, RoPE pairing

  // KV cache, F32, per layer [n_slots, max_ctx, n_kv_heads, head_dim]: slot s owns positions
  // [s * max_ctx, (s + 1) * max_ctx). Uninitialized: positions >= a slot's n_past are never
  // read.
  std::vector<std::unique_ptr<float[]>> key_cache_;
  std::vector<std::unique_ptr<float[]>> value_cache_;

  // Per-row bookkeeping of the current batch.
  std::vector<int32_t> tokens_;     // [n_rows]
  std::vector<int64_t> row_slot_;   // [n_rows]
  std::vector<int64_t> attn_slot_;  // [n_rows]   the slot whose cache the row attends over
  BatchRowsPlan plan_;              // positions, rows per slot, group ends (batch_rows.h)

  // Activations for a batch of up to batch_capacity_ rows.
  int64_t batch_capacity_ = 0;
  std::vector<float> x_;       // [n_rows, dim]        residual stream
  std::vector<float> xb_;      // [n_rows, dim]        normed input of a sublayer
  std::vector<float> xb2_;     // [n_rows, dim]        sublayer output
  std::vector<float> q_;       // [n_rows, n_heads * head_dim]
  std::vector<float> k_;       // [n_rows, n_kv_heads * head_dim]  new K rows before scatter
  std::vector<float> v_;       // [n_rows, n_kv_heads * head_dim]  new V rows before scatter
  std::vector<float> att_;     // [n_rows, n_heads * head_dim]  attention output
  std::vector<float> hb_;      // [n_rows, hidden_dim] gate, then silu(gate) * up
  std::vector<float> hb2_;     // [n_rows, hidden_dim] up
  std::vector<float> logits_;  // [n_rows or n_groups, vocab]
};

}  // namespace speclab
