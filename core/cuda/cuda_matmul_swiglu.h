// The SwiGLU feed-forward's first half in one launch (Shazeer 2020, "GLU Variants Improve
// Transformer"): out = silu(x · W_gateᵀ) * (x · W_upᵀ). Unfused it is three launches per layer
// (two products and cuda_swiglu) and two round trips of [n_tokens, hidden] through memory;
// a decode step is launch-bound (docs/device.md, 2026-11-24), so the pair is fused where the
// vectorized BF16 kernel serves both products: one warp computes row r of both products from
// the same activations and writes only silu(g) * u.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_weights.h"

namespace speclab {

// out[t, r] = silu(sum_i x[t,i] W_gate[r,i]) * (sum_i x[t,i] W_up[r,i]), all device pointers.
//   out: [n_tokens, hidden]   x: [n_tokens, dim]   gate, up: [hidden, dim], the same dtype
//   up_scratch: [n_tokens, hidden], used only by the unfused fallback
// One fused kernel when cuda_matmul_bf16_vec_applies holds for both weights (the products
// then equal cuda_matmul_weights' bit for bit, the same summation order); otherwise the
// unfused sequence cuda_matmul_weights(gate), cuda_matmul_weights(up), cuda_swiglu.
// Asynchronous on `stream`; out must not alias x or up_scratch.
void cuda_matmul_swiglu(float* out, const float* x, const CudaWeightView& gate,
                        const CudaWeightView& up, float* up_scratch, int64_t n_tokens,
                        cudaStream_t stream);

// Whether cuda_matmul_swiglu takes its fused kernel for these arguments.
bool cuda_matmul_swiglu_fuses(const float* x, const CudaWeightView& gate, const CudaWeightView& up,
                              int64_t n_tokens);

}  // namespace speclab
