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

// One warp per kHidden consecutive hidden rows: the gate and up rows of each are dot products
// of the same activations, so the warp computes them together (cuda_bf16_rows_dot over 2 x
// kHidden weight rows, the activations loaded once for all; each row's sums in the order of
// the unfused kernel, so the same bits), then lane 0 writes silu(g) * u with swiglu_kernel's
// expression (core/cuda/cuda_ops.cu). Rows past `hidden` read the warp's first row again and
// are not stored.
//   out: [n_tokens, hidden]   x: [n_tokens, dim]   gate, up: [hidden, dim / 8] uint4 (BF16)
template <int kMaxT, int kHidden>
__global__ void matmul_swiglu_bf16_kernel(float* out, const float* __restrict__ x,
                                          const uint4* __restrict__ gate,
                                          const uint4* __restrict__ up, int64_t hidden, int64_t dim,
                                          int n_tokens) {
  const int lane = threadIdx.x % kCudaWarp;
  const int64_t r0 =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / kCudaWarp) + threadIdx.x / kCudaWarp) *
      kHidden;
  if (r0 >= hidden) return;  // whole warp leaves together
  const uint4* rows[2 * kHidden];
#pragma unroll
  for (int h = 0; h < kHidden; h++) {
    const int64_t r = r0 + h < hidden ? r0 + h : r0;
    rows[2 * h] = gate + r * (dim / 8);
    rows[2 * h + 1] = up + r * (dim / 8);
  }
  float acc[2 * kHidden][kMaxT];
  cuda_bf16_rows_dot<2 * kHidden, kMaxT>(rows, x, dim, n_tokens, lane, acc);
#pragma unroll
  for (int h = 0; h < kHidden; h++) {
    if (r0 + h >= hidden) continue;
#pragma unroll
    for (int t = 0; t < kMaxT; t++) {
      const float g = acc[2 * h][t], u = acc[2 * h + 1][t];
      if (lane == 0 && t < n_tokens) out[t * hidden + r0 + h] = g / (1.0f + expf(-g)) * u;
    }
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
  const uint4* g = static_cast<const uint4*>(gate.data);
  const uint4* u = static_cast<const uint4*>(up.data);
  SPECLAB_ASSERT(n_tokens >= 1 && n_tokens <= kCudaBf16VecMaxTokens);
  const int n = static_cast<int>(n_tokens);
  // The smallest register tile that holds the call's tokens (as matmul_bf16_vec): one hidden
  // row (its gate and up rows) a warp up to 4 tokens, two from 5 on.
  const int64_t grid1 = cuda_ceil_div(gate.rows, kWarpsPerBlock);
  if (n <= 1) {
    matmul_swiglu_bf16_kernel<1, 1>
        <<<grid1, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  } else if (n <= 2) {
    matmul_swiglu_bf16_kernel<2, 1>
        <<<grid1, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  } else if (n <= 4) {
    matmul_swiglu_bf16_kernel<4, 1>
        <<<grid1, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  } else {
    const int64_t grid2 = cuda_ceil_div(gate.rows, 2 * kWarpsPerBlock);
    matmul_swiglu_bf16_kernel<8, 2>
        <<<grid2, block, 0, stream>>>(out, x, g, u, gate.rows, gate.cols, n);
  }
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_swiglu_bf16_kernel: bad launch configuration");
}

}  // namespace speclab
