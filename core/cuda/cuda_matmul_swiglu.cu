#include "core/cuda/cuda_bf16_dot.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_matmul_swiglu.h"
#include "core/cuda/cuda_ops.h"
#include "core/error.h"

namespace speclab {
namespace {

constexpr int kWarpsPerBlock = 8;  // as matmul_bf16_vec_kernel

// One warp per hidden row r: the gate and up dot products of every token (the same
// cuda_bf16_row_dot as the unfused kernel), then lane 0 writes silu(g) * u with swiglu_kernel's
// expression (core/cuda/cuda_ops.cu).
//   out: [n_tokens, hidden]   x: [n_tokens, dim]   gate, up: [hidden, dim / 8] uint4 (BF16)
template <int kMaxT>
__global__ void matmul_swiglu_bf16_kernel(float* out, const float* __restrict__ x,
                                          const uint4* __restrict__ gate,
                                          const uint4* __restrict__ up, int64_t hidden, int64_t dim,
                                          int n_tokens) {
  const int lane = threadIdx.x % kCudaWarp;
  const int64_t r =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / kCudaWarp) + threadIdx.x / kCudaWarp;
  if (r >= hidden) return;  // whole warp leaves together
  float g[kMaxT], u[kMaxT];
  cuda_bf16_row_dot<kMaxT>(gate + r * (dim / 8), x, dim, n_tokens, lane, g);
  cuda_bf16_row_dot<kMaxT>(up + r * (dim / 8), x, dim, n_tokens, lane, u);
#pragma unroll
  for (int t = 0; t < kMaxT; t++) {
    if (lane == 0 && t < n_tokens) out[t * hidden + r] = g[t] / (1.0f + expf(-g[t])) * u[t];
  }
}

}  // namespace

bool cuda_matmul_swiglu_fuses(const float* x, const CudaWeightView& gate, const CudaWeightView& up,
                              int64_t n_tokens) {
  return cuda_matmul_bf16_vec_applies(x, gate, n_tokens) &&
         cuda_matmul_bf16_vec_applies(x, up, n_tokens) && gate.rows == up.rows &&
         gate.cols == up.cols;
}

void cuda_matmul_swiglu(float* out, const float* x, const CudaWeightView& gate,
                        const CudaWeightView& up, float* up_scratch, int64_t n_tokens,
                        cudaStream_t stream) {
  SPECLAB_ASSERT(gate.rows == up.rows && gate.cols == up.cols);
  if (!cuda_matmul_swiglu_fuses(x, gate, up, n_tokens)) {
    cuda_matmul_weights(out, x, gate, n_tokens, stream);
    cuda_matmul_weights(up_scratch, x, up, n_tokens, stream);
    cuda_swiglu(out, out, up_scratch, n_tokens * gate.rows, stream);
    return;
  }
  const int block = kWarpsPerBlock * kCudaWarp;
  const int64_t grid = cuda_ceil_div(gate.rows, kWarpsPerBlock);
  const uint4* g = static_cast<const uint4*>(gate.data);
  const uint4* u = static_cast<const uint4*>(up.data);
  const int n = static_cast<int>(n_tokens);
  // The smallest register tile that holds the call's tokens (as matmul_bf16_vec).
  if (n <= 1) {
    matmul_swiglu_bf16_kernel<1><<<grid, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  } else if (n <= 2) {
    matmul_swiglu_bf16_kernel<2><<<grid, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  } else {
    matmul_swiglu_bf16_kernel<4><<<grid, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  }
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_swiglu_bf16_kernel: bad launch configuration");
}

}  // namespace speclab
