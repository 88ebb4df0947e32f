// sampling_draw (core/sampling.h) on one block of at most kCudaVerifyBlock threads (device
// code only): the verifier's residual and bonus draws and the device draft step use it, so
// both draw as the host does, up to the order of the double sums.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_launch_config.h"

namespace speclab {

struct CudaDrawShared {
  double chunk_sum[kCudaVerifyBlock];  // per-thread chunk mass
  double red[32];
  int64_t red_i[32];
  int chunk;
  int64_t last_positive;
};

// sampling_draw on the block: inverse CDF of w[n] (>= 0, unnormalized) at u. Thread c owns
// the contiguous chunk c; the chunk holding u * total is found on thread 0 from the chunk
// sums, then scanned by its owner. Returns -1 if every weight is zero.
__device__ inline int64_t cuda_block_draw(const float* w, int64_t n, double u, CudaDrawShared* sh) {
  const int64_t per = (n + blockDim.x - 1) / blockDim.x;
  const int64_t lo_raw = static_cast<int64_t>(threadIdx.x) * per;
  const int64_t lo = lo_raw < n ? lo_raw : n, hi = lo + per < n ? lo + per : n;
  double s = 0.0;
  int64_t last = -1;
  for (int64_t i = lo; i < hi; i++) {
    if (w[i] > 0.0f) {
      s += w[i];
      last = i;
    }
  }
  sh->chunk_sum[threadIdx.x] = s;
  const int64_t last_positive = cuda_block_max(last, sh->red_i);
  if (last_positive < 0) return -1;
  double total = 0.0;
  if (threadIdx.x == 0) {
    for (int c = 0; c < static_cast<int>(blockDim.x); c++) total += sh->chunk_sum[c];
    const double target = u * total;
    double cum = 0.0;
    int chunk = -1;
    for (int c = 0; c < static_cast<int>(blockDim.x); c++) {
      if (target < cum + sh->chunk_sum[c]) {
        chunk = c;
        break;
      }
      cum += sh->chunk_sum[c];
    }
    sh->chunk = chunk;
    sh->red[0] = cum;  // mass before the chunk
    sh->red[1] = target;
    sh->last_positive = last_positive;  // default: rounding at the tail
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) == sh->chunk) {
    double cum = sh->red[0];
    const double target = sh->red[1];
    for (int64_t i = lo; i < hi && i < last_positive; i++) {
      if (w[i] <= 0.0f) continue;
      cum += w[i];
      if (target < cum) {
        sh->last_positive = i;
        break;
      }
    }
  }
  __syncthreads();
  const int64_t r = sh->last_positive;
  __syncthreads();
  return r;
}

}  // namespace speclab
