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

// No value yet: loses to every (value, id) but NaN (cuda_argmax_pick never picks NaN).
constexpr int32_t kCudaArgmaxNoId = 2147483647;

// The pick over the warp's 32 (value, id); every lane gets it.
__device__ inline CudaArgmax cuda_warp_argmax(CudaArgmax best) {
  for (int off = 16; off > 0; off >>= 1) {
    CudaArgmax o;
    o.value = __shfl_xor_sync(0xffffffffu, best.value, off);
    o.id = __shfl_xor_sync(0xffffffffu, best.id, off);
    best = cuda_argmax_pick(best, o);
  }
  return best;
}

// The pick over the block's threads' (value, id); every thread gets it. The rule (larger
// value, ties to the lower id) is associative and commutative, so partial picks of a row's
// chunks combine in any order to the row's.
__device__ inline CudaArgmax cuda_block_argmax_pick(CudaArgmax best, CudaArgmax* shared) {
  best = cuda_warp_argmax(best);
  __syncthreads();
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = best;
  __syncthreads();
  CudaArgmax r = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); w++) r = cuda_argmax_pick(r, shared[w]);
  return r;
}

// Argmax of values[n] over the whole block; every thread gets the result.
__device__ inline int32_t cuda_block_argmax(const float* values, int64_t n, CudaArgmax* shared) {
  CudaArgmax best{-INFINITY, kCudaArgmaxNoId};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    best = cuda_argmax_pick(best, CudaArgmax{values[i], static_cast<int32_t>(i)});
  }
  const CudaArgmax r = cuda_block_argmax_pick(best, shared);
  // All values -inf (or n == 0): the lowest id, as sampling_argmax returns 0.
  return r.id == kCudaArgmaxNoId ? 0 : r.id;
}

}  // namespace speclab
