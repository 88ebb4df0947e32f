#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_rope_kv_pair.cuh"
#include "core/cuda/cuda_rope_kv_rows.h"

namespace speclab {
namespace {

// One thread per (row, head slot, pair), as rope_kv_kernel, with the row's own position and
// cache row slot * max_ctx + position.
__global__ void rope_kv_rows_kernel(float* q, const float* k_cur, const float* v_cur,
                                    float* k_cache, float* v_cache, const int32_t* slot,
                                    const int32_t* pos, int64_t max_ctx, const float* inv_freq,
                                    CudaRopeKvShape s) {
  const int64_t half = s.head_dim / 2;
  const int64_t slots = s.n_heads + s.n_kv_heads;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= s.n_tokens * slots * half) return;
  const int64_t i = idx % half;
  const int64_t ts = idx / half;  // r * slots + head slot
  const int64_t r = ts / slots, head_slot = ts % slots;
  const int64_t p = static_cast<int64_t>(pos[r]);
  const int64_t cache_row = static_cast<int64_t>(slot[r]) * max_ctx + p;
  cuda_rope_kv_pair(q, k_cur, v_cur, k_cache, v_cache, inv_freq, s, r, head_slot, i, p, cache_row);
}

}  // namespace

void cuda_rope_kv_write_rows(float* q, const float* k_cur, const float* v_cur, float* k_cache,
                             float* v_cache, const int32_t* slot, const int32_t* pos,
                             int64_t max_ctx, const float* inv_freq, const CudaRopeKvShape& shape,
                             cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_elementwise(shape.n_tokens * (shape.n_heads + shape.n_kv_heads) *
                                               (shape.head_dim / 2));
  rope_kv_rows_kernel<<<l.grid_x, l.block, 0, stream>>>(q, k_cur, v_cur, k_cache, v_cache, slot,
                                                        pos, max_ctx, inv_freq, shape);
  SPECLAB_CUDA_CHECK_LAUNCH("rope_kv_rows_kernel: bad launch configuration");
}

}  // namespace speclab
