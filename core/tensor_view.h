// A non-owning view of a weight tensor as stored in a model file (often inside an mmap).
//
// Shapes follow the HF / PyTorch convention, outermost first: a linear layer's weight
// is [out_features, in_features] and row r (one output feature) is contiguous.
// For block-quantized dtypes (Q8_0, Q4_0, Q4_1) the innermost dimension is a multiple
// of the block size (32) and a row is n_cols/32 blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace speclab {

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  const void* data = nullptr;  // not owned
  size_t nbytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Number of rows when viewed as a 2-D matrix [rows, cols] with cols = innermost dim.
  int64_t rows() const { return shape.empty() ? 0 : numel() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
  const uint8_t* row_ptr(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * dtype_row_bytes(dtype, cols());
  }
};

}  // namespace speclab
