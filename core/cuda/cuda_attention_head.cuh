// One (query, head) of causal GQA attention over a contiguous run of cache rows: the body of
// attention_kernel (core/cuda/cuda_attention.cu), shared with the ragged attention of the
// batched runner (core/cuda/cuda_attention_rows.cu) so that both compute the same floats in the
// same order for the same context.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_launch_config.h"

namespace speclab {

// Called by every thread of a block (it synchronizes the block). Phase 1: a warp per cache
// position computes its score (lanes split head_dim). Phase 2: block softmax over the n_ctx
// scores (max in float, sum of the exponentials in double). Phase 3: thread d accumulates
// output dimension d over positions (coalesced reads of V rows).
//   oh:      [head_dim] output of this (query, head)
//   qh:      [head_dim] the query's head (RoPE applied)
//   k_cache, v_cache: [>= n_ctx, n_kv_heads, head_dim] positions 0.. of this sequence
//   sc:      [>= n_ctx] scratch for the scores
//   red_f, red_d: [32] each, block-shared reduction scratch
__device__ inline void cuda_attention_head(float* oh, const float* qh, const float* k_cache,
                                           const float* v_cache, float* sc, int64_t n_ctx,
                                           int64_t kv_h, int64_t n_kv_heads, int64_t head_dim,
                                           float scale, float* red_f, double* red_d) {
  const int64_t kv_stride = n_kv_heads * head_dim;
  const int lane = threadIdx.x % kCudaWarp, warp = threadIdx.x / kCudaWarp;
  const int n_warps = blockDim.x / kCudaWarp;

  for (int64_t p = warp; p < n_ctx; p += n_warps) {
    const float* kh = k_cache + p * kv_stride + kv_h * head_dim;
    float s = 0.0f;
    for (int64_t d = lane; d < head_dim; d += kCudaWarp) s += qh[d] * kh[d];
    s = cuda_warp_sum(s);
    if (lane == 0) sc[p] = s * scale;
  }
  __syncthreads();

  float m = -INFINITY;
  for (int64_t p = threadIdx.x; p < n_ctx; p += blockDim.x) m = fmaxf(m, sc[p]);
  m = cuda_block_max(m, red_f);
  double sum = 0.0;
  for (int64_t p = threadIdx.x; p < n_ctx; p += blockDim.x) {
    const float e = expf(sc[p] - m);
    sc[p] = e;
    sum += e;
  }
  sum = cuda_block_sum(sum, red_d);  // ends with __syncthreads: all of sc is written
  const float inv = static_cast<float>(1.0 / sum);

  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t p = 0; p < n_ctx; p++)
      acc += sc[p] * inv * v_cache[p * kv_stride + kv_h * head_dim + d];
    oh[d] = acc;
  }
}

}  // namespace speclab
