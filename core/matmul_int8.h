// Integer dot products of block-quantized weights (Q8_0, Q4_0, Q4_1, and the k-quants Q4_K and
// Q6_K) with activations quantized to int8 per block (32 values, or 256 for the k-quants), as the
// fast CPU engines compute them (llama.cpp's q8_0 / q8_1 / q8_K activation blocks): the plain
// specification that the AVX-512 VNNI kernels (core/matmul_vnni.cpp) are tested against.
//
// Activation blocks of a token: 32 values (x[32b, 32b + 32)) for Q8_0 / Q4_0 / Q4_1 weights,
// as llama.cpp's q8_0 / q8_1; 256 values, one per super-block, for Q4_K / Q6_K, as its q8_K
// (act_block_values). Each block of n values:
//   amax = max |x_j|,  dx = amax / 127,  q_j = nearest-even(x_j * (1 / dx))  in [-127, 127]
//   (dx = 0 and q = 0 for an all-zero block).
// The weights of 32 columns (a weight block) are integers w_j with a scale per 16 of them (dw_lo
// for j < 16, dw_hi for j >= 16) and a minimum m, so that the dequantized weight is dw * w_j + m:
//   Q8_0: dw = d, w = qs, m = 0;   Q4_0: dw = d, w = nibble - 8, m = 0;
//   Q4_1: dw = d, w = nibble, m = the block's m;
//   Q4_K (sub-block j of a super-block): dw = d * sc_j, w = nibble, m = -(dmin * m_j), the
//     FP32 products dtype_to_f32 forms;
//   Q6_K: dw = d * scales[e / 16] per 16 values (FP32 products), w = q - 32, m = 0.
// A weight block then contributes, with dx the scale of the activation block that holds it,
//   dx * (dw_lo * sum_{j<16} w_j q_j + dw_hi * sum_{j>=16} w_j q_j + m * sum_j q_j)
// where the integer sums are exact. Against the FP32 activations the only error is the
// activations' rounding, |x_j - dx q_j| <= dx / 2, so for every output
//   |int8 result - FP32 result| <= sum_b (dx_b / 2) * sum_{j in b} |W_j|   (b: activation blocks,
//                                                                             W: dequantized)
// plus FP32 summation rounding (and, for Q4_K, the rounding of dw * w + m to FP32 in W, far
// smaller): matmul_int8_error_bound computes it, tests hold to it. A 256-value block lets one
// outlier coarsen the rounding of 256 values instead of 32 (a larger bound); it is what lets the
// k-quant kernels keep a super-block's sums in integers and its record small
// (core/matmul_vnni.h).
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace speclab {

// Whether weights of this dtype have an integer dot product with int8 activations.
bool dtype_has_int8_dot(DType dtype);

// Values per activation block for weights of `weights`' dtype: 32, or 256 for Q4_K / Q6_K.
int act_block_values(DType weights);

// Quantizes one activation block of n values as specified above; returns dx. x, q: [n].
float act_quantize_block(const float* x, int n, int8_t* q);

// Plain reference of the integer path: out[t, r] = sum over blocks as specified above,
// accumulated in double. out: [n_tokens, n_out], x: [n_tokens, n_in] FP32 (quantized here),
// w: [n_out, n_in] in a dtype with dtype_has_int8_dot.
void matmul_weights_ref_int8(float* out, const float* x, const TensorView& w, int64_t n_tokens);

// The bound above for every output: bound[t, r] = sum_b (dx_b / 2) * sum_{j in b} |W[r, j]|.
void matmul_int8_error_bound(float* bound, const float* x, const TensorView& w, int64_t n_tokens);

}  // namespace speclab
