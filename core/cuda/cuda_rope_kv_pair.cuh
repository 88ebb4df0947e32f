// One thread's share of RoPE + KV-cache write: the body of rope_kv_kernel
// (core/cuda/cuda_rope_kv.cu), shared with the ragged version of the batched runner
// (core/cuda/cuda_rope_kv_rows.cu) so that both rotate with the same operations.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_rope_kv_shape.h"

namespace speclab {

// For pair i of head slot `slot` of row t at position pos (angle pos * inv_freq[i] in double,
// as cuda_rope_apply): slots [0, n_heads) are query heads, rotated in place in q; slots
// [n_heads, n_heads + n_kv_heads) are kv heads, whose rotated key pair and unrotated value
// pair go to cache row `cache_row`.
//   q: [n_rows, n_heads, head_dim]   k_cur, v_cur: [n_rows, n_kv_heads, head_dim]
//   k_cache, v_cache: [> cache_row, n_kv_heads, head_dim]   inv_freq: [head_dim/2]
__device__ inline void cuda_rope_kv_pair(float* q, const float* k_cur, const float* v_cur,
                                         float* k_cache, float* v_cache, const float* inv_freq,
                                         const CudaRopeKvShape& s, int64_t t, int64_t slot,
                                         int64_t i, int64_t pos, int64_t cache_row) {
  const int64_t half = s.head_dim / 2;
  const double angle = static_cast<double>(pos) * inv_freq[i];
  const float c = static_cast<float>(cos(angle));
  const float sn = static_cast<float>(sin(angle));
  const int64_t ia = s.interleaved ? 2 * i : i;
  const int64_t ib = ia + (s.interleaved ? 1 : half);
  if (slot < s.n_heads) {
    float* v = q + (t * s.n_heads + slot) * s.head_dim;
    const float va = v[ia], vb = v[ib];
    v[ia] = va * c - vb * sn;
    v[ib] = va * sn + vb * c;
    return;
  }
  const int64_t kh = slot - s.n_heads;
  const int64_t src = (t * s.n_kv_heads + kh) * s.head_dim;
  const int64_t dst = (cache_row * s.n_kv_heads + kh) * s.head_dim;
  const float ka = k_cur[src + ia], kb = k_cur[src + ib];
  k_cache[dst + ia] = ka * c - kb * sn;
  k_cache[dst + ib] = ka * sn + kb * c;
  v_cache[dst + ia] = v_cur[src + ia];
  v_cache[dst + ib] = v_cur[src + ib];
}

}  // namespace speclab
