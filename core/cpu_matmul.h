// Matrix-vector and small-batch matrix products against stored weights: out = x · Wᵀ.
//
// The weights dominate the bytes moved in decoding, so the kernel reads each weight row
// once per call however many tokens are batched: rows are the outer loop, a row is
// converted to FP32 into a small per-thread buffer, and dotted with every token's
// activations. Verifying k draft tokens therefore costs about one decode step of memory
// traffic, which is what makes speculative decoding pay on a memory-bound machine.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace speclab {

// out[t, r] = sum_i x[t, i] * W[r, i]   (FP32 accumulation)
//   out: [n_tokens, n_out]   x: [n_tokens, n_in]   w: [n_out, n_in] in any DType
// Parallel over output rows (OpenMP, static schedule). Each output is reduced by one thread
// in a fixed order that does not depend on n_tokens or the thread count, so a token's result
// is bit-identical whether it is computed alone or batched (batch invariance).
void matmul_weights(float* out, const float* x, const TensorView& w, int64_t n_tokens);

// Plain reference: dequantizes W with dtype_to_f32 and accumulates in double. For tests.
void matmul_weights_ref(float* out, const float* x, const TensorView& w, int64_t n_tokens);

// Converts row r of w to FP32 (the fast path used by matmul_weights), dst: [w.cols()].
void weights_row_to_f32(float* dst, const TensorView& w, int64_t r);

// Which instruction set the fast path uses: "avx2" (chosen at run time when the CPU has
// AVX2 + FMA + F16C) or "generic" (compiler-vectorized baseline code).
const char* matmul_isa();
// For tests and comparisons: force the generic path (true) or go back to the best one the
// CPU supports (false). Not thread-safe: call it between kernel calls.
void matmul_force_generic(bool force);

}  // namespace speclab
