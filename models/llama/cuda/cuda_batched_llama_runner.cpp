#include "models/llama/cuda/cuda_batched_llama_runner.h"

#include <algorithm>

#include "core/cuda/cuda_attention_rows.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_matmul_rows.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/cuda_rope_kv_rows.h"
#include "core/error.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/token_runner.h"

namespace speclab {

CudaBatchedLlamaRunner::CudaBatchedLlamaRunner(const LlamaModel& model, int64_t n_slots,
                                               int64_t max_ctx)
    : config_(model.config) {
  const LlamaConfig& c = config_;
  SPECLAB_INPUT_CHECK(n_slots >= 1, "batched runner: n_slots ", n_slots, " must be >= 1");
  std::vector<bool> no_skip;
  max_ctx_ = token_runner_check_setup(model, max_ctx, &no_skip);
  books_.assign(static_cast<size_t>(n_slots),
                kv_cache_book_make(max_ctx_, c.n_kv_heads, c.head_dim));
  kv_dim_ = c.n_kv_heads * c.head_dim;

  cuda_keep_stream_ordered_memory();  // per-step scratch reuses pool memory
  SPECLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                     "no CUDA device? see speclab_cuda_device_info()");
  w_ = cuda_llama_weights_upload(model, no_skip);
  caches_.resize(c.n_layers);
  const size_t layer_floats = static_cast<size_t>(n_slots * max_ctx_ * kv_dim_);
  for (LayerCache& lc : caches_) {
    lc.key_cache.resize(layer_floats);  // uninitialized: rows >= a slot's n_past are never read
    lc.value_cache.resize(layer_floats);
  }
}

CudaBatchedLlamaRunner::~CudaBatchedLlamaRunner() {
  if (stream_) {
    cudaStreamSynchronize(stream_);  // no kernel may still read the buffers
    cudaStreamDestroy(stream_);
  }
}

int64_t CudaBatchedLlamaRunner::n_past(int64_t slot) const {
  batch_rows_check_slot(books_, slot);
  return books_[slot].n_past;
}

size_t CudaBatchedLlamaRunner::kv_cache_bytes() const {
  return kv_cache_bytes_for(config_, n_slots(), max_ctx_);
}

size_t CudaBatchedLlamaRunner::kv_cache_bytes_for(const LlamaConfig& c, int64_t n_slots,
                                                  int64_t max_ctx) {
  // The same F32 layout as the CPU runner's cache.
  return BatchedLlamaRunner::kv_cache_bytes_for(c, n_slots, max_ctx);
}

void CudaBatchedLlamaRunner::truncate(int64_t slot, int64_t n) {
  batch_rows_check_truncate(books_, slot, n);
  KvCacheBook& book = books_[slot];
  const int64_t keep = rollback_keep(slot, n);
  SPECLAB_ASSERT(keep >= 0 && keep <= book.n_past);
  book.truncate(keep);
}

void CudaBatchedLlamaRunner::ensure_batch_capacity(int64_t n) {
  if (n <= batch_capacity_) return;
  const LlamaConfig& c = config_;
  const int64_t q_dim = c.n_heads * c.head_dim;
  // The previous forward synchronized before returning: nothing reads the old buffers.
  x_.resize(n * c.dim);
  xb_.resize(n * c.dim);
  xb2_.resize(n * c.dim);
  q_.resize(n * q_dim);
  k_cur_.resize(n * kv_dim_);
  v_cur_.resize(n * kv_dim_);
  att_.resize(n * q_dim);
  hb_.resize(n * c.hidden_dim);
  hb2_.resize(n * c.hidden_dim);
  logits_.resize(n * c.vocab_size);
  meta_.resize(5 * n);
  batch_capacity_ = n;
}

const float* CudaBatchedLlamaRunner::forward_batch(const BatchRow* rows, int64_t n_rows,
                                                   bool last_only) {
  const LlamaConfig& c = config_;
  // Check everything before changing anything (the CPU runner's checks and messages).
  batch_rows_plan(rows, n_rows, books_, c.vocab_size, max_ctx_, &plan_);
  const int64_t n_groups = static_cast<int64_t>(plan_.group_end.size());
  ensure_batch_capacity(n_rows);

  // The rows' metadata in one copy: [tokens | slots | attention slots | positions | group
  // ends - 1]. Stream-ordered; the previous forward's kernels are done (it synchronized).
  meta_host_.resize(static_cast<size_t>(4 * n_rows + n_groups));
  int32_t* h_tokens = meta_host_.data();
  int32_t* h_slot = h_tokens + n_rows;
  int32_t* h_attn = h_slot + n_rows;
  int32_t* h_pos = h_attn + n_rows;
  int32_t* h_last = h_pos + n_rows;
  int64_t longest = 0;  // the longest context of any row: the attention scores' stride
  for (int64_t r = 0; r < n_rows; r++) {
    h_tokens[r] = rows[r].token;
    h_slot[r] = rows[r].slot;
    const int64_t attn_slot = attention_cache_slot(rows[r].slot);
    SPECLAB_ASSERT(attn_slot >= 0 && attn_slot < n_slots());
    h_attn[r] = static_cast<int32_t>(attn_slot);
    h_pos[r] = static_cast<int32_t>(plan_.positions[r]);
    longest = std::max(longest, plan_.positions[r] + 1);
  }
  for (int64_t g = 0; g < n_groups; g++) h_last[g] = static_cast<int32_t>(plan_.group_end[g] - 1);
  cudaStream_t s = stream_;
  meta_.upload(meta_host_.data(), meta_host_.size(), s);
  const int32_t* d_tokens = meta_.data();
  const int32_t* d_slot = d_tokens + n_rows;
  const int32_t* d_attn = d_slot + n_rows;
  const int32_t* d_pos = d_attn + n_rows;
  const int32_t* d_last = d_pos + n_rows;

  const int64_t dim = c.dim;
  float* x = x_.data();
  CudaRopeKvShape rope;
  rope.n_tokens = n_rows;
  rope.n_heads = c.n_heads;
  rope.n_kv_heads = c.n_kv_heads;
  rope.head_dim = c.head_dim;
  rope.interleaved = w_.rope_interleaved;
  // Attention scores [n_rows * n_heads, longest], stream-ordered, as large as this batch needs.
  float* scores = nullptr;
  SPECLAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scores),
                                     sizeof(float) * static_cast<size_t>(n_rows * c.n_heads) *
                                         static_cast<size_t>(longest),
                                     s),
                     "device out of memory (attention scores): lower max_ctx or the batch");

  cuda_embedding_lookup(x, d_tokens, w_.tok_embeddings.view(), n_rows, s);
  for (int64_t l = 0; l < c.n_layers; l++) {
    const CudaLlamaLayerWeights& lw = w_.layers[l];
    LayerCache& kv = caches_[l];
    // Attention sublayer: x += wo · attention(rope(wq·xb), rope(wk·xb), wv·xb), the three
    // projections once over all rows of all slots; each row's K/V to its slot's cache row.
    cuda_rmsnorm(xb_.data(), x, lw.attn_norm.data(), n_rows, dim, c.rms_norm_eps, s);
    float* const qkv_out[3] = {q_.data(), k_cur_.data(), v_cur_.data()};
    const CudaWeightView qkv_w[3] = {lw.wq.view(), lw.wk.view(), lw.wv.view()};
    cuda_matmul_rows3(qkv_out, xb_.data(), qkv_w, n_rows, s);
    cuda_rope_kv_write_rows(q_.data(), k_cur_.data(), v_cur_.data(), kv.key_cache.data(),
                            kv.value_cache.data(), d_slot, d_pos, max_ctx_, w_.inv_freq.data(),
                            rope, s);
    cuda_attention_rows(att_.data(), q_.data(), kv.key_cache.data(), kv.value_cache.data(), d_attn,
                        d_pos, n_rows, c.n_heads, c.n_kv_heads, c.head_dim, max_ctx_, scores,
                        longest, s);
    cuda_matmul_rows_add(x, att_.data(), lw.wo.view(), n_rows, xb2_.data(), s);

    // MLP sublayer: x += w_down · (silu(w_gate·xb) * (w_up·xb)).
    cuda_rmsnorm(xb_.data(), x, lw.ffn_norm.data(), n_rows, dim, c.rms_norm_eps, s);
    float* const gate_up_out[2] = {hb_.data(), hb2_.data()};
    const CudaWeightView gate_up_w[2] = {lw.w_gate.view(), lw.w_up.view()};
    cuda_matmul_rows2(gate_up_out, xb_.data(), gate_up_w, n_rows, s);
    cuda_swiglu(hb_.data(), hb_.data(), hb2_.data(), n_rows * c.hidden_dim, s);
    cuda_matmul_rows_add(x, hb_.data(), lw.w_down.view(), n_rows, xb2_.data(), s);
  }
  SPECLAB_CUDA_CHECK(cudaFreeAsync(scores, s), "attention scratch free failed");

  // Final norm and the output head, over all rows or each group's last row (gathered first).
  const int64_t n_out = last_only ? n_groups : n_rows;
  const float* head_in = x;
  if (last_only) {
    cuda_rows_gather(xb2_.data(), x, d_last, n_groups, dim, s);
    head_in = xb2_.data();
  }
  cuda_rmsnorm(xb_.data(), head_in, w_.final_norm.data(), n_out, dim, c.rms_norm_eps, s);
  cuda_matmul_rows(logits_.data(), xb_.data(), w_.head(), n_out, s);
  const size_t n_logits = static_cast<size_t>(n_out * c.vocab_size);
  if (logits_host_.size() < n_logits) logits_host_.resize(n_logits);
  SPECLAB_CUDA_CHECK(cudaMemcpyAsync(logits_host_.data(), logits_.data(), n_logits * sizeof(float),
                                     cudaMemcpyDeviceToHost, s),
                     "logits copy failed");
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(s), "a kernel of the batched forward pass failed");

  // Commit: each slot's rows now occupy positions [n_past, n_past + count).
  for (size_t slot = 0; slot < books_.size(); slot++) {
    if (plan_.count[slot] > 0) books_[slot].commit_linear(plan_.count[slot]);
  }
  return logits_host_.data();
}

}  // namespace speclab
