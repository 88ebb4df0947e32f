#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/cuda/cuda_bf16_dot.cuh"
#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_weight_load.cuh"
#include "core/error.h"

namespace speclab {
namespace {

// One warp per (output row, chunk of kCudaMatmulTokensPerWarp tokens). Lane l reads elements
// l, l + 32, ... of the row (for block types: element l of every block) and keeps one partial
// sum per token of the chunk; a warp reduction finishes each output.
//   out: [n_tokens, n_out]   x: [n_tokens, n_in]
__global__ void matmul_dequant_kernel(float* out, const float* x, CudaWeightView w,
                                      int64_t row_bytes, int64_t n_tokens) {
  const int lane = threadIdx.x % kCudaWarp;
  const int64_t r =
      static_cast<int64_t>(blockIdx.x) * kCudaMatmulWarpsPerBlock + threadIdx.x / kCudaWarp;
  if (r >= w.rows) return;  // whole warp leaves together
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kCudaMatmulTokensPerWarp;
  const int64_t left = n_tokens - t0;
  const int n_t =
      static_cast<int>(left < kCudaMatmulTokensPerWarp ? left : kCudaMatmulTokensPerWarp);
  const uint8_t* row = cuda_weight_row(w, r, row_bytes);
  float acc[kCudaMatmulTokensPerWarp] = {0};
  for (int64_t j = lane; j < w.cols; j += kCudaWarp) {
    const float wj = cuda_weight_at(w, row, j);
#pragma unroll
    for (int t = 0; t < kCudaMatmulTokensPerWarp; t++) {
      if (t < n_t) acc[t] += wj * x[(t0 + t) * w.cols + j];
    }
  }
#pragma unroll
  for (int t = 0; t < kCudaMatmulTokensPerWarp; t++) {
    const float s = cuda_warp_sum(acc[t]);
    if (lane == 0 && t < n_t) out[(t0 + t) * w.rows + r] = s;
  }
}

// BF16 weights times FP32 activations for a few tokens (decoding, verification): memory-bound,
// so each lane of a warp reads 8 consecutive weights (16 bytes) per step and the warp streams
// 512 contiguous bytes of its row; cuBLAS's GemmEx took ~60 us per call at these sizes on an
// H100 whatever the matrix (the activations' rounding kernel, the stream-ordered workspace and
// the GEMM launch), which made a 3B decode step launch-bound. Activations stay FP32 (no
// rounding to BF16). One warp per output row, one partial sum per token in a fixed order that
// depends only on n_in, then a fixed warp reduction: an output does not depend on n_tokens
// (batch invariance, as on the CPU).
//   out: [n_tokens, n_out]   x: [n_tokens, n_in] 16-byte aligned   w: [n_out, n_in] BF16,
//   n_in % 8 == 0, rows 16-byte aligned; n_tokens <= kMaxT <= kBf16VecMaxTokens
template <int kMaxT>
__global__ void matmul_bf16_vec_kernel(float* out, const float* __restrict__ x,
                                       const uint4* __restrict__ w, int64_t n_out, int64_t n_in,
                                       int n_tokens) {
  const int lane = threadIdx.x % kCudaWarp;
  const int64_t r =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / kCudaWarp) + threadIdx.x / kCudaWarp;
  if (r >= n_out) return;  // whole warp leaves together
  float acc[kMaxT];
  cuda_bf16_row_dot<kMaxT>(w + r * (n_in / 8), x, n_in, n_tokens, lane, acc);
#pragma unroll
  for (int t = 0; t < kMaxT; t++) {
    if (lane == 0 && t < n_tokens) out[t * n_out + r] = acc[t];
  }
}

// Up to 4 tokens: every warp re-reads the call's activations (n_tokens x n_in floats, from L2)
// for its row, which beyond 4 tokens costs more than GemmEx's fixed overhead (measured on an
// H100: the 3B shape's forward took 5.7 ms at 1 token, 6.6 at 4, 10.1 at 8 with this kernel,
// 6.2 at 8 with GemmEx).
constexpr int kBf16VecMaxTokens = 4;
constexpr int kBf16VecWarpsPerBlock = 8;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void matmul_bf16_vec(float* out, const float* x, const CudaWeightView& w, int64_t n_tokens,
                     cudaStream_t stream) {
  const int block = kBf16VecWarpsPerBlock * kCudaWarp;
  const int64_t grid = (w.rows + kBf16VecWarpsPerBlock - 1) / kBf16VecWarpsPerBlock;
  const uint4* wv = static_cast<const uint4*>(w.data);
  const int n = static_cast<int>(n_tokens);
  // The smallest register tile that holds the call's tokens.
  if (n <= 1) {
    matmul_bf16_vec_kernel<1><<<grid, block, 0, stream>>>(out, x, wv, w.rows, w.cols, n);
  } else if (n <= 2) {
    matmul_bf16_vec_kernel<2><<<grid, block, 0, stream>>>(out, x, wv, w.rows, w.cols, n);
  } else {
    matmul_bf16_vec_kernel<4><<<grid, block, 0, stream>>>(out, x, wv, w.rows, w.cols, n);
  }
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_bf16_vec_kernel: bad launch configuration");
}

// xh[i] = x[i] rounded to the 16-bit type T (__half or __nv_bfloat16).   x, xh: [n]
template <typename T>
__global__ void round_to_16bit_kernel(T* xh, const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if constexpr (sizeof(T) == 2 && std::is_same<T, __half>::value) {
    xh[i] = __float2half_rn(x[i]);
  } else {
    xh[i] = __float2bfloat16_rn(x[i]);
  }
}

int checked_int(int64_t v, const char* what) {
  SPECLAB_INPUT_CHECK(v >= 0 && v <= INT_MAX, "cuda_matmul_weights: ", what, " = ", v,
                      " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

}  // namespace

bool cuda_matmul_bf16_vec_applies(const float* x, const CudaWeightView& w, int64_t n_tokens) {
  return w.dtype == DType::BF16 && n_tokens >= 1 && n_tokens <= kBf16VecMaxTokens &&
         w.cols % 8 == 0 && aligned16(w.data) && aligned16(x);
}

cublasHandle_t cuda_cublas_handle(cudaStream_t stream) {
  struct Holder {
    cublasHandle_t h = nullptr;
    ~Holder() {
      if (h) cublasDestroy(h);
    }
  };
  thread_local Holder holder;
  if (!holder.h) {
    SPECLAB_CUBLAS_CHECK(cublasCreate(&holder.h),
                         "no CUDA device, or cuBLAS not usable with this driver");
  }
  SPECLAB_CUBLAS_CHECK(cublasSetStream(holder.h, stream), "invalid stream?");
  return holder.h;
}

void cuda_matmul_weights_kernel(float* out, const float* x, const CudaWeightView& w,
                                int64_t n_tokens, cudaStream_t stream) {
  SPECLAB_ASSERT(!dtype_is_quantized(w.dtype) || w.cols % kQuantBlock == 0);
  const CudaLaunch l = cuda_launch_matmul_dequant(w.rows, n_tokens);
  const int64_t row_bytes = static_cast<int64_t>(dtype_row_bytes(w.dtype, w.cols));
  matmul_dequant_kernel<<<dim3(l.grid_x, l.grid_y), l.block, 0, stream>>>(out, x, w, row_bytes,
                                                                          n_tokens);
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_dequant_kernel: bad launch configuration");
}

void cuda_matmul_weights(float* out, const float* x, const CudaWeightView& w, int64_t n_tokens,
                         cudaStream_t stream) {
  const CudaMatmulPath path = cuda_matmul_path(w.dtype);
  if (cuda_matmul_bf16_vec_applies(x, w, n_tokens)) {  // BF16, 1..4 tokens: our memory-bound kernel
    matmul_bf16_vec(out, x, w, n_tokens, stream);
    return;
  }
  if (path == CudaMatmulPath::kDequantKernel) {
    cuda_matmul_weights_kernel(out, x, w, n_tokens, stream);
    return;
  }
  // Row-major out [n_tokens, n_out] is column-major outᵀ [n_out, n_tokens] = W · xᵀ, where
  // row-major W [n_out, n_in] is column-major [n_in, n_out] (so op T) and row-major x is
  // column-major xᵀ [n_in, n_tokens] (op N).
  const int m = checked_int(w.rows, "n_out");
  const int n = checked_int(n_tokens, "n_tokens");
  const int k = checked_int(w.cols, "n_in");
  const float alpha = 1.0f, beta = 0.0f;
  cublasHandle_t h = cuda_cublas_handle(stream);
  if (path == CudaMatmulPath::kCublasSgemm) {
    SPECLAB_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
                                     static_cast<const float*>(w.data), k, x, k, &beta, out, m),
                         "F32 matmul: check out/x/w shapes and that they are device pointers");
    return;
  }
  // GemmEx wants A and B in the same type: round x [n_tokens, n_in] to it in a stream-ordered
  // workspace.
  const size_t ws_bytes = cuda_matmul_workspace_bytes(w.dtype, n_tokens, w.cols);
  void* xh = nullptr;
  SPECLAB_CUDA_CHECK(cudaMallocAsync(&xh, ws_bytes, stream),
                     "device out of memory (matmul workspace)");
  const int64_t numel = n_tokens * w.cols;
  const CudaLaunch l = cuda_launch_elementwise(numel);
  const bool is_f16 = w.dtype == DType::F16;
  if (is_f16) {
    round_to_16bit_kernel<__half>
        <<<l.grid_x, l.block, 0, stream>>>(static_cast<__half*>(xh), x, numel);
  } else {
    round_to_16bit_kernel<__nv_bfloat16>
        <<<l.grid_x, l.block, 0, stream>>>(static_cast<__nv_bfloat16*>(xh), x, numel);
  }
  SPECLAB_CUDA_CHECK_LAUNCH("round_to_16bit_kernel: bad launch configuration");
  const cudaDataType_t t16 = is_f16 ? CUDA_R_16F : CUDA_R_16BF;
  SPECLAB_CUBLAS_CHECK(
      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w.data, t16, k, xh, t16, k, &beta,
                   out, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "16-bit matmul: needs sm_53+ for F16, sm_80+ for BF16");
  SPECLAB_CUDA_CHECK(cudaFreeAsync(xh, stream), "matmul workspace free failed");
}

}  // namespace speclab
