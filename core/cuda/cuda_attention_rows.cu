#include "core/cuda/cuda_attention_head.cuh"
#include "core/cuda/cuda_attention_rows.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/error.h"

namespace speclab {
namespace {

// One block per (row, head): the row's slot and position from device memory, then
// cuda_attention_head over that slot's cache rows [0, pos].
//   scores: [n_rows * n_heads, score_stride]
__global__ void attention_rows_kernel(float* out, const float* q, const float* k_cache,
                                      const float* v_cache, const int32_t* slot, const int32_t* pos,
                                      float* scores, int64_t n_heads, int64_t n_kv_heads,
                                      int64_t head_dim, int64_t max_ctx, int64_t score_stride,
                                      float scale) {
  __shared__ float red_f[32];
  __shared__ double red_d[32];
  __shared__ float part[kCudaAttentionBlock];
  const int64_t w = blockIdx.x;  // r * n_heads + h
  const int64_t r = w / n_heads, h = w % n_heads;
  const int64_t kv_h = h / (n_heads / n_kv_heads);
  const int64_t base = static_cast<int64_t>(slot[r]) * max_ctx * n_kv_heads * head_dim;
  cuda_attention_head(out + w * head_dim, q + w * head_dim, k_cache + base, v_cache + base,
                      scores + w * score_stride, static_cast<int64_t>(pos[r]) + 1, kv_h, n_kv_heads,
                      head_dim, scale, red_f, red_d, part);
}

}  // namespace

void cuda_attention_rows(float* out, const float* q, const float* k_cache, const float* v_cache,
                         const int32_t* slot, const int32_t* pos, int64_t n_rows, int64_t n_heads,
                         int64_t n_kv_heads, int64_t head_dim, int64_t max_ctx, float* scores,
                         int64_t score_stride, cudaStream_t stream) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0 && score_stride >= 1 &&
                 score_stride <= max_ctx);
  // cuda_attention's launch (same block size, so the same reduction order per row).
  const CudaLaunch l = cuda_launch_attention(n_rows, n_heads);
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim));
  attention_rows_kernel<<<l.grid_x, l.block, 0, stream>>>(out, q, k_cache, v_cache, slot, pos,
                                                          scores, n_heads, n_kv_heads, head_dim,
                                                          max_ctx, score_stride, scale);
  SPECLAB_CUDA_CHECK_LAUNCH("attention_rows_kernel: bad launch configuration");
}

}  // namespace speclab
