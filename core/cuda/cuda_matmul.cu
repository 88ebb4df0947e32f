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
#include "core/cuda/cuda_ops.h"
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
// rounding to BF16). One warp per output row (two rows from 2 tokens on, sharing the
// activations' loads), one partial sum per token in a fixed order that depends only on n_in,
// then a fixed warp reduction: an output does not depend on n_tokens nor on how many rows its
// warp computes (batch invariance, as on the CPU).
//
// One launch may serve up to three products of the same activations (the Q, K, V projections),
// and may add its result into its output (the residual add after wo and w_down): a decode
// step is launch-bound, and both fusions leave every output's arithmetic as it is (segment s
// is the same warp-per-row product; out += s is add_kernel's x += y). Bf16VecSegments:
// core/cuda/cuda_bf16_dot.cuh.
//   x: [n_tokens, n_in] 16-byte aligned, n_in % 8 == 0; n_tokens <= kMaxT <= kCudaBf16VecMaxTokens
template <int kMaxT, int kRows>
__global__ void matmul_bf16_vec_kernel(Bf16VecSegments seg, const float* __restrict__ x,
                                       int64_t n_in, int n_tokens) {
  const int lane = threadIdx.x % kCudaWarp;
  // This warp's kRows consecutive output rows (counted over all segments), each resolved to
  // its segment on its own: a warp's rows may straddle two segments. Rows past the last
  // segment read the warp's first row again and are not stored.
  const int64_t r0 =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / kCudaWarp) + threadIdx.x / kCudaWarp) *
      kRows;
  int64_t rr[kRows];
  int ss[kRows];
  const uint4* rows[kRows];
#pragma unroll
  for (int i = 0; i < kRows; i++) {
    rr[i] = r0 + i;
    ss[i] = cuda_bf16_segment_of(seg, &rr[i]);
  }
  if (ss[0] == seg.n) return;  // whole warp leaves together
#pragma unroll
  for (int i = 0; i < kRows; i++) {
    const bool past = ss[i] == seg.n;
    rows[i] = cuda_bf16_segment_w(seg, past ? ss[0] : ss[i]) + (past ? rr[0] : rr[i]) * (n_in / 8);
  }
  float acc[kRows][kMaxT];
  cuda_bf16_rows_dot<kRows, kMaxT>(rows, x, n_in, n_tokens, lane, acc);
#pragma unroll
  for (int i = 0; i < kRows; i++) {
    if (ss[i] == seg.n) continue;
    float* out = cuda_bf16_segment_out(seg, ss[i]);
    const int64_t n_out = cuda_bf16_segment_rows(seg, ss[i]);
#pragma unroll
    for (int t = 0; t < kMaxT; t++) {
      if (lane == 0 && t < n_tokens) {
        if (seg.accumulate) {
          out[t * n_out + rr[i]] += acc[i][t];
        } else {
          out[t * n_out + rr[i]] = acc[i][t];
        }
      }
    }
  }
}

// Up to kCudaBf16VecMaxTokens (8) tokens, the cut-over cuda_bf16_vec_token_limit() (8, or 4
// by SPECLAB_CUDA_VEC_TOKENS): each lane re-reads its tokens' activations (from L1/L2) for the
// rows of its warp, 2 float4 per token and 16 weight bytes over the warp's rows, so the tiles
// below keep that at 2-4 float4 per 16 weight bytes (one row a warp re-reading 8 tokens' was
// 16: the H100's 3B step took 10.1 ms at 8 tokens with one row a warp, 6.2 through GemmEx).
constexpr int kBf16VecWarpsPerBlock = 8;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void matmul_bf16_vec(const Bf16VecSegments& seg, const float* x, int64_t n_in, int64_t n_tokens,
                     cudaStream_t stream) {
  int64_t rows = 0;
  for (int s = 0; s < seg.n; s++) rows += seg.rows[s];
  const int block = kBf16VecWarpsPerBlock * kCudaWarp;
  SPECLAB_ASSERT(n_tokens >= 1 && n_tokens <= kCudaBf16VecMaxTokens);
  const int n = static_cast<int>(n_tokens);
  // The smallest register tile that holds the call's tokens; from 2 tokens on, two rows a
  // warp, from 5 on four (cuda_bf16_rows_dot: the activations loaded once for the warp's rows).
  if (n <= 1) {
    const int64_t grid = cuda_ceil_div(rows, kBf16VecWarpsPerBlock);
    matmul_bf16_vec_kernel<1, 1><<<grid, block, 0, stream>>>(seg, x, n_in, n);
  } else if (n <= 4) {
    const int64_t grid = cuda_ceil_div(rows, 2 * kBf16VecWarpsPerBlock);
    if (n <= 2) {
      matmul_bf16_vec_kernel<2, 2><<<grid, block, 0, stream>>>(seg, x, n_in, n);
    } else {
      matmul_bf16_vec_kernel<4, 2><<<grid, block, 0, stream>>>(seg, x, n_in, n);
    }
  } else {
    const int64_t grid = cuda_ceil_div(rows, 4 * kBf16VecWarpsPerBlock);
    matmul_bf16_vec_kernel<8, 4><<<grid, block, 0, stream>>>(seg, x, n_in, n);
  }
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_bf16_vec_kernel: bad launch configuration");
}

Bf16VecSegments one_segment(float* out, const CudaWeightView& w, bool accumulate) {
  Bf16VecSegments seg;
  seg.w[0] = static_cast<const uint4*>(w.data);
  seg.out[0] = out;
  seg.rows[0] = w.rows;
  seg.n = 1;
  seg.accumulate = accumulate;
  return seg;
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
  return w.dtype == DType::BF16 && n_tokens >= 1 && n_tokens <= cuda_bf16_vec_token_limit() &&
         w.cols % 8 == 0 && aligned16(w.data) && aligned16(x);
}

void cuda_matmul_weights_add(float* x_io, const float* in, const CudaWeightView& w,
                             int64_t n_tokens, float* scratch, cudaStream_t stream) {
  if (cuda_matmul_bf16_vec_applies(in, w, n_tokens)) {
    matmul_bf16_vec(one_segment(x_io, w, true), in, w.cols, n_tokens, stream);
    return;
  }
  cuda_matmul_weights(scratch, in, w, n_tokens, stream);
  cuda_add_inplace(x_io, scratch, n_tokens * w.rows, stream);
}

bool cuda_matmul_weights3_fuses(const float* x, const CudaWeightView (&w)[3], int64_t n_tokens) {
  for (const CudaWeightView& wi : w) {
    if (!cuda_matmul_bf16_vec_applies(x, wi, n_tokens) || wi.cols != w[0].cols) return false;
  }
  return true;
}

void cuda_matmul_weights3(float* const (&out)[3], const float* x, const CudaWeightView (&w)[3],
                          int64_t n_tokens, cudaStream_t stream) {
  if (!cuda_matmul_weights3_fuses(x, w, n_tokens)) {
    for (int s = 0; s < 3; s++) cuda_matmul_weights(out[s], x, w[s], n_tokens, stream);
    return;
  }
  Bf16VecSegments seg;
  for (int s = 0; s < 3; s++) {
    seg.w[s] = static_cast<const uint4*>(w[s].data);
    seg.out[s] = out[s];
    seg.rows[s] = w[s].rows;
  }
  seg.n = 3;
  matmul_bf16_vec(seg, x, w[0].cols, n_tokens, stream);
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
  if (cuda_matmul_bf16_vec_applies(x, w, n_tokens)) {  // BF16, 1..8 tokens: our memory-bound kernel
    matmul_bf16_vec(one_segment(out, w, false), x, w.cols, n_tokens, stream);
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
