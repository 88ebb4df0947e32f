// Elementwise and per-row operations of a transformer block, FP32, output first.
// Buffers are row-major; "[n_tokens, dim]" means n_tokens rows of dim floats.
#pragma once

#include <cstdint>

namespace speclab {

// RMSNorm per row: out = x / sqrt(mean(x^2) + eps) * weight.
//   out, x: [n_tokens, dim] (may alias)   weight: [dim]
void rmsnorm(float* out, const float* x, const float* weight, int64_t n_tokens, int64_t dim,
             float eps);

// SwiGLU of the Llama MLP: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
//   out, gate, up: [n] (out may alias gate or up)
// Calls of at least kSplitElements (core/threads.h) outside a parallel region run over the
// kernels' threads, with the same bits (a batch's or a prompt's MLP; the step team's items are
// already split).
void swiglu(float* out, const float* gate, const float* up, int64_t n);

// Numerically stable softmax in place over x: [n].
void softmax(float* x, int64_t n);

// Residual add: x += y, both [n].
void add_inplace(float* x, const float* y, int64_t n);

}  // namespace speclab
