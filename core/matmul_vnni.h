// The AVX-512 VNNI kernels of matmul_weights (core/cpu_matmul.h) for Q8_0, Q4_0, Q4_1, Q4_K and
// Q6_K weights: integer dot products (vpdpbusd; vpmaddubsw + vpdpwssd for the k-quants) against
// activations quantized to int8 per block (32 values; 256 for the k-quants), as specified by
// core/matmul_int8.h. Internal to core/cpu_matmul.cpp; compiled with target attributes, called
// only when the CPU has AVX-512 F/BW/VL + VNNI.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/segment_prefetch.h"

namespace speclab {
namespace matmul_vnni {

// One packed record per token and 64-value step of the input (two activation blocks):
//   int8  q[64]     the quantized values of blocks 2s and 2s + 1 (zeros past the row's end)
//   float dx[16]    dx of block 2s in lanes 0..7, of block 2s + 1 in lanes 8..15
//   aux[16]         per 4-value lane l: Q4_0: int32 -8 * sum of its 4 q (the offset that makes
//                   the weights unsigned for vpdpbusd, cancelled);
//                   Q4_1: float dx * (sum of the block's 32 q) / 8 (the minimum's term)
//                   (Q8_0 records stop after dx: its kernel moves the weights' signs to the
//                   activations and needs no offset)
// Q8_0's 128 bytes per 64 values take 16 KB for an 8192-column row (the 3B and 1B down
// projections): two threads read [3072, 8192] Q8_0 matrices at 26-30 GB/s on a Zen 4 guest where
// 24 KB of records (with the offsets) read at 18-23: they must fit in L1 beside the streaming
// weights.
constexpr int64_t kRecordBytes = 192;
constexpr int64_t kQ8RecordBytes = 128;
constexpr int64_t kStepValues = 64;

// For k-quant weights (Q4_K, Q6_K) one record per token and 256-value super-block of the input,
// the activation block of core/matmul_int8.h (one dx, llama.cpp's q8_K):
//   int8  q[256]   the quantized values: 32-value block record_block(weights, p) (its values in
//                  order) at 32p; Q4_K: blocks 0, 2, 1, 3, 4, 6, 5, 7, the order in which its
//                  sub-blocks' nibbles come out of two 64-byte loads of qs; Q6_K: column order
//   int16 s16[16]  at byte 256: s16[e] = the sum of the q of values 16e..16e + 15 (column order)
//   float dx       at byte 288; bytes 292..319 zero
// 320 bytes: 8192 columns (a down projection's row) take 10 KB, which leaves room in a 32 KB L1
// for the weights streaming past (at 18 KB, with a dx per 32 values spread over lanes, two threads
// read those rows at 60% of the rate of shorter ones).
constexpr int64_t kSuperRecordBytes = 320;
constexpr int64_t kSuperRecordSums = 256;
constexpr int64_t kSuperRecordScale = 288;
int record_block(DType weights, int p);
// Values and bytes per record for weights of `weights`' dtype: 64 and kRecordBytes (Q8_0:
// kQ8RecordBytes), or 256 and kSuperRecordBytes (Q4_K, Q6_K).
int64_t record_values(DType weights);
int64_t record_bytes(DType weights);
// Packed activations differ per weight dtype with an int8 dot (the order of the values, the
// per-lane term): record_kind numbers them 0..kRecordKinds - 1.
constexpr int kRecordKinds = 5;
int record_kind(DType weights);

// Activations packed for the kernels of `weights`' dtype, B = record_bytes(weights): chunk c
// (tokens [c * chunk, ...), n_c of them) starts at byte c * n_records * chunk * B, its record s
// at + s * n_c * B, token t of the chunk at + t * B. n_records = ceil(n_in /
// record_values(weights)). Records [s0, s1) of every token.
//   dst: [n_chunks][n_records][n_c][B]   x: [n_tokens, n_in] FP32, n_in % 32 == 0 (% 256 for
//   k-quants)
void pack(uint8_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk, int64_t s0,
          int64_t s1, DType weights);

// out[t * n_out + j] for rows j < n_rows (<= 12, a work item) starting at row0 (stored rows
// row_bytes apart) and tokens t < n_tokens; xq: the chunk's packed activations, xs = n_tokens *
// record_bytes(dtype).
using RowsFn = void (*)(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                        int n_rows, const uint8_t* xq, int64_t xs, int64_t n_in, int64_t n_tokens);
// The kernel for weights of `dtype` (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K); null for any other dtype.
// whole_rows: a call of one token reads each row whole, without software prefetch, instead of in
// prefetched column segments, and so does a call of up to 4 tokens whose records for one row take
// at most 16 KB (the same bits either way). prefetch: where the column segments' software
// prefetch puts the next segment's weights (core/segment_prefetch.h; no bit changes).
RowsFn rows_fn(DType dtype, bool whole_rows, SegmentPrefetch prefetch);

}  // namespace matmul_vnni
}  // namespace speclab
