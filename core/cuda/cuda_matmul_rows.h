// Batch-invariant products for continuous batching: out = x · Wᵀ over any number of rows such
// that each output row's floats depend only on its own input row and the weight, never on how
// many rows the call has or where the row sits among them. The batched runner
// (models/llama/cuda/cuda_batched_llama_runner.h) needs this so that a request's logits, and
// so its tokens at temperature 0, are the same at concurrency 1 and N.
//
// cuda_matmul_weights does not promise it: cuBLAS may choose its algorithm (and so its
// summation order, split-K included) by the shape, and the GemmEx path rounds the activations
// to BF16; its vectorized BF16 kernel serves only 1 to 8 tokens. Here:
//   - BF16 weights (n_in % 8 == 0, 16-byte aligned): the vectorized BF16 kernel's warp-per-row
//     dot product (cuda_bf16_row_dot, core/cuda/cuda_bf16_dot.cuh; FP32 activations, one fmaf
//     chain per row in an order fixed by n_in) over chunks of kCudaMatmulRowsChunk rows, all
//     chunks in one launch. The chunks of one weight row are neighbouring blocks, so a row read
//     from memory serves the other chunks from L2. A row's floats equal those of
//     cuda_matmul_weights' BF16 kernel at 1 to 8 tokens.
//   - every other dtype or shape: the dequantizing kernel (cuda_matmul_weights_kernel: one
//     warp per output, a fixed order per output whatever the rows), which is what
//     cuda_matmul_weights runs for Q8_0/Q4_0/Q4_1/Q4_K/Q6_K too.
// The cost: no tensor cores. Past a few rows per slot a GEMM would be compute-bound where
// these kernels re-read the activations per output row; a batched verify of b x k rows costs
// about ceil(b k / 4) passes over L2-resident weight rows instead of one GEMM
// (tests/bench/bench_cuda.cpp, BM_CudaBatchedForward, measures it).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_weights.h"

namespace speclab {

// Rows per chunk of the BF16 path (the vectorized kernel's largest register tile).
constexpr int kCudaMatmulRowsChunk = 4;

// Whether the BF16 path serves w (else the dequantizing kernel): BF16, n_in % 8 == 0, 16-byte
// aligned. Depends on the weight only, so every call with w takes the same path.
bool cuda_matmul_rows_vectorized(const CudaWeightView& w);

// out[r, o] = sum_i x[r, i] * w[o, i] (FP32 accumulation), batch invariant.
//   out: [n_rows, w.rows]   x: [n_rows, w.cols] 16-byte aligned   w: [n_out, n_in] any DType
void cuda_matmul_rows(float* out, const float* x, const CudaWeightView& w, int64_t n_rows,
                      cudaStream_t stream);

// out[s] = x · w[s]ᵀ for s = 0, 1, 2 (Q, K and V of one normed input): one launch when the
// BF16 path serves all three (the same per-row floats as three calls), else three calls.
//   out[s]: [n_rows, w[s].rows]   x: [n_rows, n_in]   w[s]: [rows_s, n_in]
void cuda_matmul_rows3(float* const (&out)[3], const float* x, const CudaWeightView (&w)[3],
                       int64_t n_rows, cudaStream_t stream);

// out[0] = x · w[0]ᵀ and out[1] = x · w[1]ᵀ (gate and up), in one launch on the BF16 path.
void cuda_matmul_rows2(float* const (&out)[2], const float* x, const CudaWeightView (&w)[2],
                       int64_t n_rows, cudaStream_t stream);

// x_io += in · Wᵀ (wo and w_down with the residual add): on the BF16 path the kernel adds into
// x_io (out += s, cuda_add_inplace's x += y), else cuda_matmul_rows into `scratch` then
// cuda_add_inplace; the same floats either way.
//   x_io: [n_rows, n_out] (must not alias in)   in: [n_rows, n_in]   scratch: [n_rows, n_out]
void cuda_matmul_rows_add(float* x_io, const float* in, const CudaWeightView& w, int64_t n_rows,
                          float* scratch, cudaStream_t stream);

}  // namespace speclab
