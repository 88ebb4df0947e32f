#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_rope_kv.h"
#include "core/cuda/cuda_rope_kv_pair.cuh"

namespace speclab {
namespace {

// One thread per (token, head slot, pair): cuda_rope_kv_pair (core/cuda/cuda_rope_kv_pair.cuh)
// at position *n_past + t, cache row = position. The rotation is rope_kernel's
// (core/cuda/cuda_rope.cu), operation for operation.
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
  cuda_rope_kv_pair(q, k_cur, v_cur, k_cache, v_cache, inv_freq, s, t, slot, i, pos, pos);
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
