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
// scores (max in float, sum of the exponentials in double). Phase 3: the block's threads
// form G = blockDim / head_dim groups (rounded down; head_dim > blockDim: one thread walks
// several dimensions); thread
// (g, d) accumulates output dimension d over positions g, g + G, ... (coalesced reads of V
// rows), and the G partial sums of d are added in group order. One thread per dimension
// walking every position left a 3B head (head_dim 128) on 128 threads with one dependent
// chain of n_ctx loads each.
//   oh:      [head_dim] output of this (query, head)
//   qh:      [head_dim] the query's head (RoPE applied)
//   k_cache, v_cache: [>= n_ctx, n_kv_heads, head_dim] positions 0.. of this sequence
//   sc:      [>= n_ctx] scratch for the scores
//   red_f, red_d: [32] each, block-shared reduction scratch
//   part:    [blockDim.x] block-shared, the groups' partial outputs
__device__ inline void cuda_attention_head(float* oh, const float* qh, const float* k_cache,
                                           const float* v_cache, float* sc, int64_t n_ctx,
                                           int64_t kv_h, int64_t n_kv_heads, int64_t head_dim,
                                           float scale, float* red_f, double* red_d, float* part) {
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

  const int64_t block = blockDim.x;
  if (head_dim <= block) {
    const int64_t groups = block / head_dim;  // threads past groups * head_dim idle here
    const int64_t g = threadIdx.x / head_dim, d = threadIdx.x % head_dim;
    if (g < groups) {
      const float* vh = v_cache + kv_h * head_dim + d;
      float acc = 0.0f;
      for (int64_t p = g; p < n_ctx; p += groups) acc += sc[p] * inv * vh[p * kv_stride];
      part[threadIdx.x] = acc;  // [groups, head_dim]
    }
    __syncthreads();
    if (g == 0) {
      float o = part[d];
      for (int64_t j = 1; j < groups; j++) o += part[j * head_dim + d];
      oh[d] = o;
    }
  } else {
    for (int64_t d = threadIdx.x; d < head_dim; d += block) {
      float acc = 0.0f;
      for (int64_t p = 0; p < n_ctx; p++)
        acc += sc[p] * inv * v_cache[p * kv_stride + kv_h * head_dim + d];
      oh[d] = acc;
    }
  }
  __syncthreads();  // part and sc may be reused by the block's next call
}

}  // namespace speclab
