#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_rope_kv.h"

namespace speclab {
namespace {

// One thread per (token, head slot, pair): slots [0, n_heads) are query heads, rotated in
// place; slots [n_heads, n_heads + n_kv_heads) are kv heads, whose rotated key pair and
// unrotated value pair go to the cache row of the token's position. The rotation is
// rope_kernel's (core/cuda/cuda_rope.cu), operation for operation.
__global__ void rope_kv_kernel(float* q, const float* k_cur, const float* v_cur, float* k_cache,
                               float* v_cache, const int32_t* n_past, const float* inv_freq,
                               CudaRopeKvShape s) {
  const int64_t half = s.head_dim / 2;
  const int64_t slots = s.n_heads + s.n_kv_heads;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= s.n_tokens * slots * half) return;
  const int64_t i = idx % half;
  const int64_t ts = idx / half;  // t * slots + slot
  const int64_t t = ts / slots, slot = ts % slots;
  const int64_t pos = static_cast<int64_t>(*n_past) + t;
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
  const int64_t dst = (pos * s.n_kv_heads + kh) * s.head_dim;
  const float ka = k_cur[src + ia], kb = k_cur[src + ib];
  k_cache[dst + ia] = ka * c - kb * sn;
  k_cache[dst + ib] = ka * sn + kb * c;
  v_cache[dst + ia] = v_cur[src + ia];
  v_cache[dst + ib] = v_cur[src + ib];
}

}  // namespace

void cuda_rope_kv_write(float* q, const float* k_cur, const float* v_cur, float* k_cache,
                        float* v_cache, const int32_t* n_past, const float* inv_freq,
                        const CudaRopeKvShape& shape, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_elementwise(shape.n_tokens * (shape.n_heads + shape.n_kv_heads) *
                                               (shape.head_dim / 2));
  rope_kv_kernel<<<l.grid_x, l.block, 0, stream>>>(q, k_cur, v_cur, k_cache, v_cache, n_past,
                                                   inv_freq, shape);
  SPECLAB_CUDA_CHECK_LAUNCH("rope_kv_kernel: bad launch configuration");
}

}  // namespace speclab
