// Warp and block reductions used by the kernels (device code only).
// Block reductions need blockDim.x a multiple of 32 and every thread of the block to call
// them; `shared` holds one value per warp (at least 32 entries).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace speclab {

template <typename T>
__device__ inline T cuda_warp_sum(T v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <typename T>
__device__ inline T cuda_warp_max(T v) {
  for (int off = 16; off > 0; off >>= 1) {
    const T o = __shfl_xor_sync(0xffffffffu, v, off);
    v = o > v ? o : v;
  }
  return v;
}

// Sum over the block; every thread gets the result.
template <typename T>
__device__ inline T cuda_block_sum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = cuda_warp_sum(v);
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < n_warps; w++) total += shared[w];  // fixed order: deterministic
  return total;
}

template <typename T>
__device__ inline T cuda_block_max(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = cuda_warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T m = shared[0];
  for (int w = 1; w < n_warps; w++) m = shared[w] > m ? shared[w] : m;
  return m;
}

// (value, id) with the larger value, ties to the lower id: sampling_argmax's rule.
struct CudaArgmax {
  float value;
  int32_t id;
};
__device__ inline CudaArgmax cuda_argmax_pick(CudaArgmax a, CudaArgmax b) {
  if (b.value > a.value || (b.value == a.value && b.id < a.id)) return b;
  return a;
}

// Argmax of values[n] over the whole block; every thread gets the result.
__device__ inline int32_t cuda_block_argmax(const float* values, int64_t n, CudaArgmax* shared) {
  CudaArgmax best{-INFINITY, 2147483647};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    best = cuda_argmax_pick(best, CudaArgmax{values[i], static_cast<int32_t>(i)});
  }
  for (int off = 16; off > 0; off >>= 1) {
    CudaArgmax o;
    o.value = __shfl_xor_sync(0xffffffffu, best.value, off);
    o.id = __shfl_xor_sync(0xffffffffu, best.id, off);
    best = cuda_argmax_pick(best, o);
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = best;
  __syncthreads();
  CudaArgmax r = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); w++) r = cuda_argmax_pick(r, shared[w]);
  // All values -inf (or n == 0): the lowest id, as sampling_argmax returns 0.
  return r.id == 2147483647 ? 0 : r.id;
}

}  // namespace speclab
