// The CUDA twin of core/cpu_matmul.h: out = x · Wᵀ against a weight stored on the device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_weights.h"

namespace speclab {

// out[t, r] = sum_i x[t, i] * W[r, i]   (FP32 accumulation), all device pointers.
//   out: [n_tokens, n_out]   x: [n_tokens, n_in]   w: [n_out, n_in] in any DType
// Path by dtype (cuda_matmul_path, core/cuda/cuda_launch_config.h):
//   F32: cublasSgemm; F16/BF16: x rounded to the weight's 16-bit type, cublasGemmEx with FP32
//   compute; Q8_0/Q4_0/Q4_1: our kernel, which dequantizes each weight as it reads it.
// Asynchronous on `stream`.
void cuda_matmul_weights(float* out, const float* x, const CudaWeightView& w, int64_t n_tokens,
                         cudaStream_t stream);

// Always our dequantizing kernel, for any dtype (tests and comparisons; F32 accumulation
// in a fixed order per output, like the CPU).
void cuda_matmul_weights_kernel(float* out, const float* x, const CudaWeightView& w,
                                int64_t n_tokens, cudaStream_t stream);

// Whether cuda_matmul_weights takes its vectorized BF16 kernel for this call (BF16 weights,
// 1 to cuda_bf16_vec_token_limit() tokens (8; core/cuda/cuda_launch_config.h), n_in % 8 == 0,
// x and w 16-byte aligned); else cuBLAS or the dequantizing
// kernel. The fused products (cuda_matmul_swiglu) take their fused kernel exactly then.
bool cuda_matmul_bf16_vec_applies(const float* x, const CudaWeightView& w, int64_t n_tokens);

// x_io += in · Wᵀ: a product and the residual add after it (wo, w_down) in one launch where
// the vectorized BF16 kernel serves the product, equal bit for bit to cuda_matmul_weights into
// `scratch` followed by cuda_add_inplace (which is what runs otherwise).
//   x_io: [n_tokens, n_out] (must not alias in)   in: [n_tokens, n_in]   w: [n_out, n_in]
//   scratch: [n_tokens, n_out]
void cuda_matmul_weights_add(float* x_io, const float* in, const CudaWeightView& w,
                             int64_t n_tokens, float* scratch, cudaStream_t stream);

// out[s] = x · w[s]ᵀ for s = 0, 1, 2 (the Q, K and V projections of one normed input): one
// launch when cuda_matmul_bf16_vec_applies holds for all three (the same per-row arithmetic
// as three calls), else three cuda_matmul_weights calls.
//   out[s]: [n_tokens, w[s].rows]   x: [n_tokens, n_in]   w[s]: [rows_s, n_in]
void cuda_matmul_weights3(float* const (&out)[3], const float* x, const CudaWeightView (&w)[3],
                          int64_t n_tokens, cudaStream_t stream);
bool cuda_matmul_weights3_fuses(const float* x, const CudaWeightView (&w)[3], int64_t n_tokens);

// The calling thread's cuBLAS handle (created on first use, bound to `stream` on each call).
cublasHandle_t cuda_cublas_handle(cudaStream_t stream);

}  // namespace speclab
