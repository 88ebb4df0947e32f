#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_attention_head.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/error.h"

namespace speclab {
namespace {

// One block per (token, head): cuda_attention_head (core/cuda/cuda_attention_head.cuh) over
// cache positions [0, n_past + t].
//   scores: [n_tokens * n_heads, n_ctx_max] scratch
// n_past is *n_past_dev when that is set (cuda_attention_at: the value lives in device memory
// so a captured CUDA graph replays at any position), else n_past_value.
__global__ void attention_kernel(float* out, const float* q, const float* k_cache,
                                 const float* v_cache, float* scores, int64_t n_past_value,
                                 const int32_t* n_past_dev, int64_t n_heads, int64_t n_kv_heads,
                                 int64_t head_dim, int64_t n_ctx_max, float scale) {
  __shared__ float red_f[32];
  __shared__ double red_d[32];
  __shared__ float part[kCudaAttentionBlock];
  const int64_t n_past = n_past_dev ? static_cast<int64_t>(*n_past_dev) : n_past_value;
  const int64_t w = blockIdx.x;  // t * n_heads + h
  const int64_t t = w / n_heads, h = w % n_heads;
  const int64_t kv_h = h / (n_heads / n_kv_heads);
  cuda_attention_head(out + w * head_dim, q + w * head_dim, k_cache, v_cache,
                      scores + w * n_ctx_max, n_past + t + 1, kv_h, n_kv_heads, head_dim, scale,
                      red_f, red_d, part);
}

}  // namespace

void cuda_attention(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t n_tokens, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim, cudaStream_t stream) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0);
  const CudaLaunch l = cuda_launch_attention(n_tokens, n_heads);
  float* scores = nullptr;
  SPECLAB_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&scores),
                      cuda_attention_scratch_bytes(n_tokens, n_heads, n_past), stream),
      "device out of memory (attention scores): lower max_ctx");
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim));
  attention_kernel<<<l.grid_x, l.block, 0, stream>>>(out, q, k_cache, v_cache, scores, n_past,
                                                     nullptr, n_heads, n_kv_heads, head_dim,
                                                     n_past + n_tokens, scale);
  SPECLAB_CUDA_CHECK_LAUNCH("attention_kernel: bad launch configuration");
  SPECLAB_CUDA_CHECK(cudaFreeAsync(scores, stream), "attention scratch free failed");
}

void cuda_attention_at(float* out, const float* q, const float* k_cache, const float* v_cache,
                       int64_t n_tokens, const int32_t* n_past, int64_t n_heads, int64_t n_kv_heads,
                       int64_t head_dim, float* scores, int64_t n_ctx_max, cudaStream_t stream) {
  SPECLAB_ASSERT(n_kv_heads > 0 && n_heads % n_kv_heads == 0 && n_past != nullptr);
  const CudaLaunch l = cuda_launch_attention(n_tokens, n_heads);
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim));
  attention_kernel<<<l.grid_x, l.block, 0, stream>>>(
      out, q, k_cache, v_cache, scores, 0, n_past, n_heads, n_kv_heads, head_dim, n_ctx_max, scale);
  SPECLAB_CUDA_CHECK_LAUNCH("attention_kernel: bad launch configuration");
}

}  // namespace speclab
