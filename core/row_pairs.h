// BF16 matrices stored in row pairs: the layout in which a one-token product reads two rows'
// FMA chains from one memory stream.
//
// Why. A one-token product (decoding) reduces each output in one 16-lane FMA chain over the
// row's 32-column steps (two dependent FMAs a 64-byte line: core/matmul_avx512.cpp), and that
// chain's latency caps a core's read rate near the memory's fast state on Zen 5; a second chain
// per output would change every output's bits, and two rows read side by side are two demand
// streams, which Zen 5 reads slower than one (docs/findings.md). Rows stored in pairs give two
// independent chains from one stream with every output's sum unchanged.
//
// The layout. Pair p (rows 2p and 2p + 1) occupies the same bytes as the two rows do in the
// plain layout, [2p * row_bytes, (2p + 2) * row_bytes), with its 32-column steps interleaved:
//   row 2p + h, columns [32s, 32s + 32)  at  2p * row_bytes + 128 s + 64 h   (64 bytes)
// So a matrix is repacked in place one pair at a time, and the rows of an item of even start
// are found from its first row's address (row_pairs_row).
// Only BF16 matrices of an even number of rows whose rows are whole steps (cols % 32 == 0)
// qualify (row_pairs_fit): every Llama matrix does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_view.h"

namespace speclab {

// Bytes of one row's step in the pair layout (32 BF16 values: one cache line).
constexpr size_t kRowPairStepBytes = 64;

// Whether w can be stored in row pairs: a 2-D BF16 matrix in the plain layout, an even number
// of rows, cols a multiple of 32, with data.
bool row_pairs_fit(const TensorView& w);

// Repacks the plain rows [rows, cols] (BF16) at data into row pairs, in place (row_pairs_fit's
// conditions; parallel over pairs). row_pairs_unpack undoes it.
void row_pairs_pack(void* data, int64_t rows, int64_t cols);
void row_pairs_unpack(void* data, int64_t rows, int64_t cols);

// The address of row r of a pair-layout matrix relative to row r0 (r0 even) at `first`:
// first + (r - r0 rounded down to even) * row_bytes + 64 * (r odd), the row's first step; its
// step s is 128 s further on.
inline const uint8_t* row_pairs_row(const uint8_t* first, int64_t r, size_t row_bytes) {
  return first + static_cast<size_t>(r & ~int64_t{1}) * row_bytes +
         static_cast<size_t>(r & 1) * kRowPairStepBytes;
}

// Rows [r0, r0 + n_rows) of w (either layout) in the plain layout into dst
// [n_rows, dtype_row_bytes(w.dtype, w.cols())].
void row_pairs_copy_rows(uint8_t* dst, const TensorView& w, int64_t r0, int64_t n_rows);

// Rows [r0, r0 + n_rows) of w as plain rows row_bytes apart: w's own bytes for kRows, else the
// rows copied (row_pairs_copy_rows) into a per-thread buffer that stays valid until the thread's
// next call. For the kernel paths that read rows as contiguous memory: they give a paired
// matrix the bits they give its plain rows.
const uint8_t* row_pairs_plain_rows(const TensorView& w, int64_t r0, int64_t n_rows);

}  // namespace speclab
