// The AVX-512 kernels of matmul_weights (core/cpu_matmul.h), internal to core/cpu_matmul.cpp.
// Compiled with target attributes, called only when the CPU has the instructions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/segment_prefetch.h"
#include "core/tensor_view.h"

namespace speclab {
namespace matmul_avx512 {

// Weight rows per work item (the unit the threads share): a multiple of every tile height.
constexpr int kRowBlock = 12;

// n things (tokens) cut into the fewest parts of at most `most` each, of about equal size (the
// first parts one larger): the size of the first part (0 for n = 0). How a call's tokens are cut
// into chunks (core/cpu_matmul.cpp), passes and groups (the kernels); no cut changes a sum.
constexpr int64_t balanced_part(int64_t n, int64_t most) {
  const int64_t parts = (n + most - 1) / most;
  return parts == 0 ? 0 : (n + parts - 1) / parts;
}

// One work item: out[t * n_out + j] for rows j < n_rows (<= kRowBlock) starting at row0
// (stored rows row_bytes apart) and tokens t < n_tokens. x: activations packed by
// pack_f32 (element i of token t at x[(i / 32) * xs + 32 * t + i % 32]).
using RowsFn = void (*)(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                        int n_rows, const float* x, int64_t xs, int64_t n_in, int64_t n_tokens);
// How a call of one token (decoding, drafting) reads a work item's rows: kSegments as every
// call of more tokens (4-row register tiles, column segment by segment, the next segment
// prefetched in software), or kWholeRows (rows read whole, no software prefetch: one at a time,
// or a whole 12-row item at a time when long (6 rows for the quantized formats): rows_whole; the
// vdpbf16ps and int8 kernels also read a few tokens' rows whole, rows_bf16dot and
// core/matmul_vnni.h), or kWholeRowsAhead (as kWholeRows, each row read one at a time
// prefetching in software kWholeRowAheadBytes ahead of it into L1; the vdpbf16ps kernel reads it
// as kWholeRows). Every output has the same bits any way.
enum class Streaming { kSegments, kWholeRows, kWholeRowsAhead };
// How far ahead kWholeRowsAhead prefetches a row's weights (into the next rows past a row's end).
constexpr int64_t kWholeRowAheadBytes = 8 << 10;
// The kernel for weights of `dtype` stored in `layout` (FP32 activations; null for a layout this
// file does not read: row pairs of another dtype than BF16); prefetch: where the column
// segments' software prefetch puts the next segment's weights (core/segment_prefetch.h; no bit
// changes). Row pairs (core/row_pairs.h): row0 is an item's first row (even), row_bytes the
// plain row's bytes, and every output has the bits of the same rows stored plainly; one token
// reads a pair at a time where plain rows go one at a time.
RowsFn rows_fn(DType dtype, RowLayout layout, Streaming one_token, SegmentPrefetch prefetch);

// BF16 weights dotted with vdpbf16ps against BF16-rounded activations packed by pack_bf16
// (the opt-in avx512bf16 path). Same arguments as RowsFn; one_token, prefetch: as for rows_fn
// (every output has the same bits either way).
void rows_bf16dot(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes, int n_rows,
                  const uint16_t* xb, int64_t xs, int64_t n_in, int64_t n_tokens,
                  Streaming one_token, SegmentPrefetch prefetch);

// The order of a full step's 32 values in the packed activations, as the kernel of a weight
// dtype reads them: kNatural (column 32s + i at i), or kEvenOdd (the even columns 32s + 2j at
// j, the odd ones 32s + 2j + 1 at 16 + j: BF16 weights, widened a 32-bit pair at a time). A
// partial last step is in column order either way.
enum class StepOrder { kNatural, kEvenOdd };
StepOrder step_order(DType dtype);

// Activations packed for the tiles: per 32-wide step of the input, the 32 values of every
// token of a chunk side by side. Chunk c (tokens [c * chunk, ...), n_c of them) starts at
// c * n_steps * chunk * 32 and its step s at + s * n_c * 32 (the last step zero-padded).
//   dst: [n_chunks][n_steps][n_c][32]   x: [n_tokens, n_in]
// Steps [s0, s1) of every token, so that the threads can share the work; each step's values in
// `order` (step_order of the weights they meet).
void pack_f32(float* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk, int64_t s0,
              int64_t s1, StepOrder order);
// The same rounded to BF16 (round to nearest even).
void pack_bf16(uint16_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk,
               int64_t s0, int64_t s1);

}  // namespace matmul_avx512
}  // namespace speclab
