#include "core/row_pairs.h"

#include <cstring>
#include <vector>

#include "core/cache_line_vector.h"

namespace speclab {
namespace {

// One pair's 2 * row_bytes bytes: plain (row 2p, then row 2p + 1) to paired, or back.
//   plain:  row h at h * row_bytes, its step s at + 64 s
//   paired: row h's step s at 128 s + 64 h
void pair_interleave(uint8_t* pair, uint8_t* scratch, size_t row_bytes, bool to_pairs) {
  const size_t steps = row_bytes / kRowPairStepBytes;
  std::memcpy(scratch, pair, 2 * row_bytes);
  for (size_t s = 0; s < steps; s++) {
    for (size_t h = 0; h < 2; h++) {
      const size_t plain = h * row_bytes + s * kRowPairStepBytes;
      const size_t paired = (2 * s + h) * kRowPairStepBytes;
      if (to_pairs) {
        std::memcpy(pair + paired, scratch + plain, kRowPairStepBytes);
      } else {
        std::memcpy(pair + plain, scratch + paired, kRowPairStepBytes);
      }
    }
  }
}

void repack(void* data, int64_t rows, int64_t cols, bool to_pairs) {
  SPECLAB_ASSERT(rows % 2 == 0 && cols % 32 == 0);
  const size_t row_bytes = dtype_row_bytes(DType::BF16, cols);
  uint8_t* base = static_cast<uint8_t*>(data);
  const int64_t pairs = rows / 2;
#pragma omp parallel if (pairs * cols >= (int64_t{1} << 20))
  {
    std::vector<uint8_t> scratch(2 * row_bytes);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < pairs; p++) {
      pair_interleave(base + static_cast<size_t>(2 * p) * row_bytes, scratch.data(), row_bytes,
                      to_pairs);
    }
  }
}

}  // namespace

bool row_pairs_fit(const TensorView& w) {
  return w.dtype == DType::BF16 && w.layout == RowLayout::kRows && w.shape.size() == 2 &&
         w.data != nullptr && w.rows() % 2 == 0 && w.cols() > 0 && w.cols() % 32 == 0;
}

void row_pairs_pack(void* data, int64_t rows, int64_t cols) { repack(data, rows, cols, true); }

void row_pairs_unpack(void* data, int64_t rows, int64_t cols) { repack(data, rows, cols, false); }

void row_pairs_copy_rows(uint8_t* dst, const TensorView& w, int64_t r0, int64_t n_rows) {
  SPECLAB_ASSERT(r0 >= 0 && n_rows >= 0 && r0 + n_rows <= w.rows());
  const size_t row_bytes = dtype_row_bytes(w.dtype, w.cols());
  const uint8_t* base = static_cast<const uint8_t*>(w.data);
  if (w.layout == RowLayout::kRows) {
    std::memcpy(dst, base + static_cast<size_t>(r0) * row_bytes,
                static_cast<size_t>(n_rows) * row_bytes);
    return;
  }
  SPECLAB_ASSERT(w.layout == RowLayout::kRowPairs && w.dtype == DType::BF16);
  const size_t steps = row_bytes / kRowPairStepBytes;
  for (int64_t j = 0; j < n_rows; j++) {
    const uint8_t* row = row_pairs_row(base, r0 + j, row_bytes);
    uint8_t* out = dst + static_cast<size_t>(j) * row_bytes;
    for (size_t s = 0; s < steps; s++) {
      std::memcpy(out + s * kRowPairStepBytes, row + 2 * s * kRowPairStepBytes, kRowPairStepBytes);
    }
  }
}

const uint8_t* row_pairs_plain_rows(const TensorView& w, int64_t r0, int64_t n_rows) {
  const size_t row_bytes = dtype_row_bytes(w.dtype, w.cols());
  if (w.layout == RowLayout::kRows) {
    return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * row_bytes;
  }
  thread_local CacheLineVector<uint8_t> rows;
  const size_t need = static_cast<size_t>(n_rows) * row_bytes;
  if (rows.size() < need) rows.resize(need);
  row_pairs_copy_rows(rows.data(), w, r0, n_rows);
  return rows.data();
}

}  // namespace speclab
