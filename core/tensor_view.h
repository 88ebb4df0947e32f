// A non-owning view of a weight tensor as stored in a model file (often inside an mmap).
//
// Shapes follow the HF / PyTorch convention, outermost first: a linear layer's weight
// is [out_features, in_features] and row r (one output feature) is contiguous.
// For block-quantized dtypes (Q8_0, Q4_0, Q4_1) the innermost dimension is a multiple
// of the block size (32) and a row is n_cols/32 blocks.
//
// A BF16 matrix may instead be stored in row pairs (RowLayout::kRowPairs, core/row_pairs.h):
// rows 2p and 2p + 1 interleaved a 32-column step (one 64-byte line each) at a time, so that a
// one-token product reads two rows' accumulator chains from one stream. Such a matrix has no
// contiguous rows: row_ptr refuses it, and its readers go through core/row_pairs.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace speclab {

// How a matrix's rows lie in `data`.
enum class RowLayout : uint8_t {
  kRows,      // row r at r * dtype_row_bytes(dtype, cols), contiguous
  kRowPairs,  // BF16 only: core/row_pairs.h
};

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  const void* data = nullptr;  // not owned
  size_t nbytes = 0;
  RowLayout layout = RowLayout::kRows;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Number of rows when viewed as a 2-D matrix [rows, cols] with cols = innermost dim.
  int64_t rows() const { return shape.empty() ? 0 : numel() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
  // Row r's bytes (kRows only: a row of a kRowPairs matrix is not contiguous).
  const uint8_t* row_ptr(int64_t r) const {
    SPECLAB_ASSERT(layout == RowLayout::kRows);
    return static_cast<const uint8_t*>(data) +
           static_cast<size_t>(r) * dtype_row_bytes(dtype, cols());
  }
};

}  // namespace speclab
