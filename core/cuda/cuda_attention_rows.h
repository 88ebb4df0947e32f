// Ragged attention for continuous batching: each query row belongs to its own sequence slot
// of a slotted KV cache and sits at its own position (the CUDA twin of the attention loop of
// BatchedLlamaRunner, models/llama/batched_llama_runner.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace speclab {

// Row r (slot s = slot[r], position p = pos[r]) attends to cache rows
// [s * max_ctx, s * max_ctx + p] of its slot, i.e. positions [0, p]: causal within the slot's
// new rows, blind to every other slot. The cache already holds the new rows' K/V. One block
// per (row, head) computing cuda_attention_head (core/cuda/cuda_attention_head.cuh), the body
// of cuda_attention's kernel with the same block size: a row's output equals cuda_attention's
// for the same query and context, bit for bit, whatever the other rows of the batch.
// All pointers are device pointers.
//   out:     [n_rows, n_heads, head_dim]
//   q:       [n_rows, n_heads, head_dim]   (RoPE applied)
//   k_cache, v_cache: [n_slots * max_ctx, n_kv_heads, head_dim]   (RoPE applied to K)
//   slot:    [n_rows] int32, the slot whose cache each row reads
//   pos:     [n_rows] int32, each row's position (< max_ctx)
//   scores:  [n_rows * n_heads, score_stride] scratch, score_stride >= max over rows of pos + 1
void cuda_attention_rows(float* out, const float* q, const float* k_cache, const float* v_cache,
                         const int32_t* slot, const int32_t* pos, int64_t n_rows, int64_t n_heads,
                         int64_t n_kv_heads, int64_t head_dim, int64_t max_ctx, float* scores,
                         int64_t score_stride, cudaStream_t stream);

}  // namespace speclab
