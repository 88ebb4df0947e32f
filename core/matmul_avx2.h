// The AVX2 + FMA + F16C kernel of matmul_weights (core/cpu_matmul.h), for CPUs without
// AVX-512: a work item of kRowBlock weight rows times every token, run in column segments.
//
// Per segment of kSegment columns, the item's rows are converted to FP32 once into a per-thread
// buffer that stays in L1 (F32 rows are read in place; BF16 rows: below), then
// register tiles of up to 4 rows x 3 tokens (12 ymm accumulators, the activations of a tile read
// once per 4 rows, the weights once per 3 tokens) run over it; the accumulators are parked in
// memory between segments, without rounding. So the conversion costs once per weight per call,
// the inner loop reads L1 only, and the two FMA pipes are kept busy once there are a few tokens.
// For more than 8 tokens the activations are packed once per call segment by segment (pack), so
// that a segment's activations of all tokens are contiguous: in x itself the tokens lie n_in
// floats apart, a multiple of 4 KB in every Llama shape, and would all compete for the same few
// L1 sets. Up to 8 tokens (decoding, verification) the rows are converted whole instead, 4 at a
// time (rows_few_tokens): the weights' reads, not the arithmetic, bound those calls.
//
// BF16 rows are never converted to a copy: the tiles widen them in registers, a 16-column step
// at a time, the step's even columns by a shift and its odd columns by a mask of one 32-byte
// load (tile_bf16), with the activations packed in that order (pack), and they are read whole
// for any number of tokens, 4 rows at a time by every token tile in turn: with no converted
// copy to keep in L1 there is nothing for segments to save, and a tile over a whole row parks
// its accumulators once instead of once per segment.
//
// Batch invariance: every output (row r, token t) is summed the same way whatever tile,
// segment, item or thread computes it and however many tokens share the call:
//   acc (8 FP32 lanes) = 0;  for each 8-column slice i = 0, 8, ..., in order:
//                              acc = fma(W[r, i..i+8], x[t, i..i+8], acc)
//   out = hsum(acc) + tail,  hsum: (lanes 0-3 + lanes 4-7), then pairs, then the last two;
//                            tail: the n_in % 8 last columns, fmaf in column order from 0.
// For BF16 the slices of each whole 16-column step i are its even columns (lane l: column
// i + 2l), then its odd ones (i + 2l + 1); a last slice of 8 after the steps is in column order.
// A single token runs the same sequence in a 4 x 1 (or smaller) tile, so its outputs are
// bit-identical to those it gets inside a batch of any size, on any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace speclab {
namespace matmul_avx2 {

// Weight rows per work item (the last item of a matrix may have fewer).
constexpr int kRowBlock = 8;
// Columns per segment: a multiple of 256, so quantization blocks and K-quant super-blocks never
// straddle two segments and segments start on 8-column slices. kRowBlock x kSegment FP32
// weights = 16 KB, half of a 32 KB L1, the other half for a tile's activations (3 x 2 KB) and
// the accumulators. Long enough that parking the 12 accumulators costs little against a tile's
// 64 slices x 12 FMAs.
constexpr int64_t kSegment = 512;
// Tokens whose accumulators are parked at once; more tokens go in chunks, each converting the
// item's rows again (once per 64 tokens).
constexpr int64_t kTokenChunk = 64;

// Floats of per-thread scratch the kernel needs for rows of n_in columns: the parked
// accumulators [kRowBlock, kTokenChunk, 8] and the converted weights (a segment of the item's
// rows [kRowBlock, kSegment], or 4 whole rows [4, n_in] for up to 8 tokens).
size_t scratch_floats(int64_t n_in);

// Whether rows() reads weights of `dtype` in 16-column steps of even and odd columns (BF16:
// tile_bf16 widens a step's 16 weights by a shift and a mask), so that their activations are
// packed in that order.
bool reads_even_odd(DType dtype);

// Whether rows() reads n_tokens tokens' activations packed by pack rather than as they are,
// x [n_tokens, n_in]: BF16 weights always (reads_even_odd), other dtypes for more than 8 tokens
// (packed segment by segment; up to 8, decoding and verification, the rows are read whole, 4 at
// a time, front to back, which streams the weights from memory better, with at most 3 token
// tiles to reuse them).
bool packs_activations(int64_t n_tokens, DType dtype);

// Packed activations. Where reads_even_odd(dtype): [n_tokens, n_in] (BF16 rows are read whole
// for any number of tokens), each whole 16-column step of a token (columns i..i+15, i a
// multiple of 16) holding its 8 even columns, then its 8 odd ones; the columns after the row's
// last whole step in column order. Otherwise (more than 8 tokens) x [n_tokens, n_in] as
// [n_segments, n_tokens, kSegment], column c of token t at
// ((c / kSegment) * n_tokens + t) * kSegment + c % kSegment; the last segment's columns beyond
// n_in are never read. packed_floats: the size of that buffer (enough for either layout).
int64_t n_segments(int64_t n_in);
size_t packed_floats(int64_t n_tokens, int64_t n_in);
// Packs segments [s_begin, s_end) of x (threads may pack disjoint ranges of one buffer).
void pack(float* xp, const float* x, int64_t n_tokens, int64_t n_in, int64_t s_begin, int64_t s_end,
          DType dtype);

// One work item: out[t * n_out + j] for rows j < n_rows (<= kRowBlock) starting at row0
// (rows row_bytes apart, stored in `dtype`) and tokens t < n_tokens; xk: the activations,
// packed by pack if packs_activations(n_tokens, dtype), else x. n_next_rows: how many rows follow
// the item's in the matrix, up to kRowBlock (prefetched while this item runs: they are usually the
// same thread's next item). scratch: scratch_floats(n_in) floats of the calling thread.
void rows(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes, int n_rows,
          int n_next_rows, DType dtype, const float* xk, int64_t n_in, int64_t n_tokens,
          float* scratch);

// n values of a row stored in `dtype` (from a block boundary) to FP32, dst: [n]. Exactly the
// values dtype_to_f32 gives (the same operations and roundings).
void row_to_f32(float* dst, DType dtype, const void* src, int64_t n);

}  // namespace matmul_avx2
}  // namespace speclab
