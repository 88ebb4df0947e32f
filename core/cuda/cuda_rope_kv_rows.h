// RoPE (Su et al. 2021, "RoFormer") and the KV-cache write for a ragged batch of rows of
// several sequence slots (continuous batching): each row has its own slot and position, read
// from device memory, and its K/V go to its slot's region of a slotted cache. The twin of
// cuda_rope_kv_write (core/cuda/cuda_rope_kv.h), which serves one sequence.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_rope_kv_shape.h"

namespace speclab {

// For row r (slot s = slot[r], position p = pos[r]; angles p * inv_freq[i] in double, as
// cuda_rope_apply): rotates q's row in place, writes rope(k_cur[r]) to k_cache row
// s * max_ctx + p and v_cur[r] to v_cache row s * max_ctx + p. A row's floats equal
// cuda_rope_kv_write's for a token at the same position (the same per-thread body,
// core/cuda/cuda_rope_kv_pair.cuh). shape.n_tokens is the number of rows.
//   q:       [n_rows, n_heads, head_dim]       (in place)
//   k_cur:   [n_rows, n_kv_heads, head_dim]    (read only)
//   v_cur:   [n_rows, n_kv_heads, head_dim]
//   k_cache, v_cache: [n_slots * max_ctx, n_kv_heads, head_dim]
//   slot, pos: [n_rows] device int32 (0 <= pos < max_ctx)   inv_freq: [head_dim/2] device
void cuda_rope_kv_write_rows(float* q, const float* k_cur, const float* v_cur, float* k_cache,
                             float* v_cache, const int32_t* slot, const int32_t* pos,
                             int64_t max_ctx, const float* inv_freq, const CudaRopeKvShape& shape,
                             cudaStream_t stream);

}  // namespace speclab
