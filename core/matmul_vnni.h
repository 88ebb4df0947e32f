// The AVX-512 VNNI kernels of matmul_weights (core/cpu_matmul.h) for Q8_0, Q4_0 and Q4_1
// weights: integer dot products (vpdpbusd) against activations quantized to int8 per
// 32-value block, as specified by core/matmul_int8.h. Internal to core/cpu_matmul.cpp;
// compiled with target attributes, called only when the CPU has AVX-512 F/BW/VL + VNNI.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace speclab {
namespace matmul_vnni {

// One packed record per token and 64-value step of the input (two activation blocks):
//   int8  q[64]     the quantized values of blocks 2s and 2s + 1 (zeros past the row's end)
//   float dx[16]    dx of block 2s in lanes 0..7, of block 2s + 1 in lanes 8..15
//   aux[16]         per 4-value lane l: Q8_0 / Q4_0: int32 -c * sum of its 4 q (c = 128 / 8:
//                   the offset that makes the weights unsigned for vpdpbusd, cancelled);
//                   Q4_1: float dx * (sum of the block's 32 q) / 8 (the minimum's term)
constexpr int64_t kRecordBytes = 192;
constexpr int64_t kStepValues = 64;

// Activations packed for the kernels: chunk c (tokens [c * chunk, ...), n_c of them) starts
// at byte c * n_steps * chunk * kRecordBytes, its step s at + s * n_c * kRecordBytes, token t
// of the chunk at + t * kRecordBytes. n_steps = ceil(n_in / 64). Steps [s0, s1) of every token.
//   dst: [n_chunks][n_steps][n_c][kRecordBytes]   x: [n_tokens, n_in] FP32, n_in % 32 == 0
void pack(uint8_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk, int64_t s0,
          int64_t s1, DType weights);

// out[t * n_out + j] for rows j < n_rows (<= 12, a work item) starting at row0 (stored rows
// row_bytes apart) and tokens t < n_tokens; xq: the chunk's packed activations, xs = n_tokens *
// kRecordBytes.
using RowsFn = void (*)(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                        int n_rows, const uint8_t* xq, int64_t xs, int64_t n_in, int64_t n_tokens);
// The kernel for weights of `dtype` (Q8_0, Q4_0, Q4_1); null for any other dtype.
RowsFn rows_fn(DType dtype);

}  // namespace matmul_vnni
}  // namespace speclab
