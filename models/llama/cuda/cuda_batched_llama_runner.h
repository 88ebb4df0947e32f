// The Llama forward pass over several sequences at once on a CUDA device: the twin of
// BatchedLlamaRunner (models/llama/batched_llama_runner.h), with the same contract, checks and
// messages. S sequence slots, each with its own KvCacheBook and a [max_ctx] region of a
// device KV cache per layer; forward_batch runs ragged rows (each row = (slot, token), a
// slot's rows consecutive, a row's position = its slot's n_past + its index in its group): the
// weight products once over all rows, attention per (row, head) over the row's own slot up to
// its own position (continuous batching: vLLM's scheduler, Kwon et al. 2023; llama.cpp's
// llama_batch). The weights are uploaded once (cuda_llama_weights.h, shared with
// CudaLlamaRunner); logits come back to the host.
//
// Batch invariance, and what it costs. At temperature 0 a request's tokens must be the same
// whether it runs alone or beside other requests, so a row's logits may not depend on the
// other rows of the batch. Every kernel here computes a row from that row alone, in an order
// fixed by the shapes of the model:
//   - products: cuda_matmul_rows (core/cuda/cuda_matmul_rows.h). BF16 weights take the
//     vectorized kernel's warp-per-row dot product over chunks of 4 rows, all chunks in one
//     launch; every other dtype takes the dequantizing kernel (one warp per output, fixed
//     order). Not cuBLAS: its algorithm, and so a row's summation order, may change with the
//     number of rows, and its BF16 path rounds the activations to BF16. The cost is the tensor
//     cores: a verify of b x k rows makes ceil(b k / 4) passes over the weight rows (from L2
//     after the first) with CUDA-core FMAs, where a GEMM would read the weights once; it pays
//     while a step is bound by reading the weights (decode and short verifies) and loses to
//     cuBLAS on long prefills. BM_CudaBatchedForward (tests/bench/bench_cuda.cpp) measures it.
//   - RMSNorm, embedding, SwiGLU, the adds: one block or thread per row or element.
//   - RoPE + KV write (cuda_rope_kv_write_rows) and attention (cuda_attention_rows): the
//     per-thread and per-block bodies of CudaLlamaRunner's kernels (cuda_rope_kv_pair.cuh,
//     cuda_attention_head.cuh) with each row's slot and position read from device memory.
// So each row's logits equal, bit for bit, those of the same tokens run one slot per call
// through another CudaBatchedLlamaRunner (tests/cuda/test_cuda_batched_forward.cpp). With BF16
// weights and steps of at most 8 rows they also equal CudaLlamaRunner's (whose BF16 kernel is
// the same dot product at 1 to 8 tokens); beyond that, and for F32 (cuBLAS there), the two
// differ in float order only.
//
// Per forward: one host-to-device copy of the rows' (token, slot, attention slot, position)
// and the groups' last rows; 9 launches per layer with BF16 weights (norm, QKV, RoPE + KV
// write, attention, wo + add, norm, gate/up, SwiGLU, down + add); the logits' copy back and
// one synchronization. No CUDA graphs (a batch's shape changes every step).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda/cuda_buffer.h"
#include "core/kv_cache_book.h"
#include "models/llama/batch_rows.h"
#include "models/llama/batch_token_runner.h"
#include "models/llama/cuda/cuda_llama_weights.h"
#include "models/llama/llama_model.h"

namespace speclab {

class CudaBatchedLlamaRunner : public BatchTokenRunner {
 public:
  // n_slots >= 1 sequences of up to max_ctx positions each (max_ctx = 0 ->
  // min(config.max_seq_len, 4096)). Uploads the weights and allocates the whole device cache
  // up front: kv_cache_bytes() = n_slots * max_ctx * n_layers * 2 (K and V) * n_kv_heads *
  // head_dim * 4 bytes, as BatchedLlamaRunner. The model may be freed after construction.
  // Bad shapes or n_slots < 1 throw InputError (before any device work); a missing device or
  // too little device memory throws CudaError.
  CudaBatchedLlamaRunner(const LlamaModel& model, int64_t n_slots, int64_t max_ctx = 0);
  virtual ~CudaBatchedLlamaRunner();
  CudaBatchedLlamaRunner(const CudaBatchedLlamaRunner&) = delete;
  CudaBatchedLlamaRunner& operator=(const CudaBatchedLlamaRunner&) = delete;

  // BatchedLlamaRunner::forward_batch: host logits [n_rows, vocab] in row order, or with
  // last_only [n_groups, vocab] (each slot group's last row), valid until the next call.
  // Every check runs on the host before any device work: an unknown slot, a slot's rows in two
  // groups, a token outside the vocabulary, n_rows < 1, or a slot's n_past + count > max_ctx
  // throws InputError and leaves every slot unchanged. Synchronizes the runner's stream.
  const float* forward_batch(const BatchRow* rows, int64_t n_rows, bool last_only = false) override;
  using BatchTokenRunner::forward_batch;

  // O(1) rollback of one slot: forgets its positions >= n (0 <= n <= n_past(slot)). Other
  // slots are untouched. Bad slot or n: InputError, no change. Host bookkeeping only.
  void truncate(int64_t slot, int64_t n) override;

  int64_t n_slots() const override { return static_cast<int64_t>(books_.size()); }
  int64_t n_past(int64_t slot) const override;
  int64_t max_ctx() const override { return max_ctx_; }
  int64_t vocab() const override { return config_.vocab_size; }
  size_t kv_cache_bytes() const;
  // kv_cache_bytes() of a runner for `config` with n_slots slots of max_ctx positions (the
  // memory check before any cache is allocated); equal to BatchedLlamaRunner's.
  static size_t kv_cache_bytes_for(const LlamaConfig& config, int64_t n_slots, int64_t max_ctx);
  cudaStream_t stream() const { return stream_; }

 protected:
  // Seams for the planted bugs of tests/cuda/test_cuda_batched_forward.cpp, as
  // BatchedLlamaRunner's (a test-only subclass overrides them; the product never does).
  // Called once per row or per truncate on the host, never inside a kernel.
  //   attention_cache_slot: the slot whose cache a row of slot row_slot attends over.
  //   rollback_keep: the positions truncate(slot, n) keeps, in [0, n_past(slot)].
  virtual int64_t attention_cache_slot(int64_t row_slot) const { return row_slot; }
  virtual int64_t rollback_keep(int64_t slot, int64_t n) const { return n; }

 private:
  struct LayerCache {
    CudaBuffer<float> key_cache, value_cache;  // [n_slots, max_ctx, n_kv_heads, head_dim] each
  };
  void ensure_batch_capacity(int64_t n_rows);

  LlamaConfig config_;
  int64_t max_ctx_ = 0;
  int64_t kv_dim_ = 0;              // n_kv_heads * head_dim
  std::vector<KvCacheBook> books_;  // [n_slots]  n_past and rollback per slot
  BatchRowsPlan plan_;              // the current batch's positions and groups (batch_rows.h)
  cudaStream_t stream_ = nullptr;

  CudaLlamaWeights w_;              // uploaded once (cuda_llama_weights.h)
  std::vector<LayerCache> caches_;  // [n_layers] slot s owns rows [s * max_ctx, (s+1) * max_ctx)

  // The rows' metadata, one copy per forward: [tokens | slots | attention slots | positions]
  // ([n_rows] int32 each), then [n_groups] the last row of each slot group.
  std::vector<int32_t> meta_host_;
  CudaBuffer<int32_t> meta_;

  // Activations for a batch of up to batch_capacity_ rows (device).
  int64_t batch_capacity_ = 0;
  CudaBuffer<float> x_;             // [n_rows, dim]        residual stream
  CudaBuffer<float> xb_;            // [n_rows, dim]        normed input of a sublayer
  CudaBuffer<float> xb2_;           // [n_rows, dim] product scratch; the groups' last rows
  CudaBuffer<float> q_;             // [n_rows, n_heads * head_dim]
  CudaBuffer<float> k_cur_;         // [n_rows, n_kv_heads * head_dim] before RoPE
  CudaBuffer<float> v_cur_;         // [n_rows, n_kv_heads * head_dim]
  CudaBuffer<float> att_;           // [n_rows, n_heads * head_dim]
  CudaBuffer<float> hb_;            // [n_rows, hidden_dim] gate, then silu(gate) * up
  CudaBuffer<float> hb2_;           // [n_rows, hidden_dim] up
  CudaBuffer<float> logits_;        // [n_rows, vocab]
  std::vector<float> logits_host_;  // [n_rows or n_groups, vocab]
};

}  // namespace speclab
