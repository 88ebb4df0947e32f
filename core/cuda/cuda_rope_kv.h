// RoPE (Su et al. 2021, "RoFormer") of the new tokens' queries and keys and the KV-cache
// write, in one launch. Unfused, a layer rotates q and k in two launches and the K/V
// products write straight into the cache at a pointer computed from n_past on the host; that
// pointer and the rotation's start position are kernel arguments, which a CUDA graph would
// freeze. Here the products write into fixed scratch rows and this kernel reads n_past from
// device memory, rotates, and places K and V at cache rows n_past + t: the launch is the same
// at every position, so one captured graph replays at any n_past (as llama.cpp's graphs keep
// the KV write position out of the captured arguments).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_rope_kv_shape.h"

namespace speclab {

// For token t at position p = *n_past + t (angles p * inv_freq[i] in double, as
// cuda_rope_apply): rotates q in place, writes rope(k_cur[t]) to k_cache row p and v_cur[t]
// to v_cache row p. The floats equal cuda_rope_apply's followed by plain copies.
//   q:       [n_tokens, n_heads, head_dim]       (in place)
//   k_cur:   [n_tokens, n_kv_heads, head_dim]    (read only)
//   v_cur:   [n_tokens, n_kv_heads, head_dim]
//   k_cache, v_cache: [>= *n_past + n_tokens, n_kv_heads, head_dim]
//   n_past:  [1] device int32   inv_freq: [head_dim/2] device
void cuda_rope_kv_write(float* q, const float* k_cur, const float* v_cur, float* k_cache,
                        float* v_cache, const int32_t* n_past, const float* inv_freq,
                        const CudaRopeKvShape& shape, cudaStream_t stream);

}  // namespace speclab
