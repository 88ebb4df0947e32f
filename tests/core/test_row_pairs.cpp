// BF16 rows stored in pairs (core/row_pairs.h): where every byte goes, the round trip, the rows
// read back out, which matrices qualify, the layout's default per CPU, and the misaddressings
// that the per-path bit-identity test (test_cpu_matmul.cpp,
// RowPairsGiveEveryOutputThePlainRowsBits) exists to catch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/row_pairs.h"

namespace speclab {
namespace {

// A [rows, cols] BF16 matrix whose element (r, c) is the code r * 1000 + c (its bytes name it).
struct CodedMatrix {
  std::vector<uint16_t> codes;
  TensorView view;
  CodedMatrix(int64_t rows, int64_t cols) : codes(rows * cols) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) codes[r * cols + c] = static_cast<uint16_t>(r * 1000 + c);
    view.name = "coded";
    view.dtype = DType::BF16;
    view.shape = {rows, cols};
    view.data = codes.data();
    view.nbytes = codes.size() * 2;
  }
};

TEST(RowPairs, EachRowsStepLiesWhereTheLayoutSays) {
  const int64_t rows = 6, cols = 96;  // three pairs of three steps
  CodedMatrix m(rows, cols);
  const std::vector<uint16_t> plain = m.codes;
  row_pairs_pack(m.codes.data(), rows, cols);
  const size_t row_bytes = 2 * cols;
  const auto* bytes = reinterpret_cast<const uint8_t*>(m.codes.data());
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t s = 0; s < cols / 32; s++) {
      // Row 2p + h's step s at 2p * row_bytes + 128 s + 64 h.
      const size_t at = (r / 2) * 2 * row_bytes + 128 * s + 64 * (r % 2);
      EXPECT_EQ(std::memcmp(bytes + at, plain.data() + r * cols + 32 * s, 64), 0)
          << "row " << r << " step " << s;
      // row_pairs_row finds the same place from row 0 (and from any even row before it).
      EXPECT_EQ(row_pairs_row(bytes, r, row_bytes) + 128 * s, bytes + at) << "row " << r;
      if (r >= 2) {
        EXPECT_EQ(row_pairs_row(bytes + 2 * row_bytes, r - 2, row_bytes) + 128 * s, bytes + at);
      }
    }
  }
}

TEST(RowPairs, UnpackAndCopiedRowsGiveThePlainRowsBack) {
  const int64_t rows = 10, cols = 64;
  CodedMatrix m(rows, cols);
  const std::vector<uint16_t> plain = m.codes;
  ASSERT_TRUE(row_pairs_fit(m.view));
  row_pairs_pack(m.codes.data(), rows, cols);
  EXPECT_NE(m.codes, plain);
  m.view.layout = RowLayout::kRowPairs;
  EXPECT_FALSE(row_pairs_fit(m.view));  // already paired
  // Any run of rows, odd starts included, copied out plainly.
  for (int64_t r0 = 0; r0 < rows; r0++) {
    for (int64_t n = 0; r0 + n <= rows; n++) {
      std::vector<uint16_t> got(n * cols, 0xffff);
      row_pairs_copy_rows(reinterpret_cast<uint8_t*>(got.data()), m.view, r0, n);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), plain.begin() + r0 * cols))
          << "rows [" << r0 << ", " << r0 + n << ")";
      if (n == 0) continue;
      const auto* p = reinterpret_cast<const uint16_t*>(row_pairs_plain_rows(m.view, r0, n));
      EXPECT_TRUE(std::equal(p, p + n * cols, plain.begin() + r0 * cols)) << "plain rows " << r0;
    }
  }
  row_pairs_unpack(m.codes.data(), rows, cols);
  EXPECT_EQ(m.codes, plain);
  // A plain matrix's rows are its own bytes, not a copy.
  CodedMatrix q(rows, cols);
  EXPECT_EQ(row_pairs_plain_rows(q.view, 3, 2),
            reinterpret_cast<const uint8_t*>(q.codes.data()) + 3 * 2 * cols);
}

TEST(RowPairs, OnlyBf16MatricesOfEvenRowsAndWholeStepsQualify) {
  EXPECT_TRUE(row_pairs_fit(CodedMatrix(2, 32).view));
  EXPECT_FALSE(row_pairs_fit(CodedMatrix(3, 32).view));  // odd rows
  EXPECT_FALSE(row_pairs_fit(CodedMatrix(2, 48).view));  // a half step
  CodedMatrix f16(2, 32);
  f16.view.dtype = DType::F16;
  EXPECT_FALSE(row_pairs_fit(f16.view));
  CodedMatrix vec(1, 64);
  vec.view.shape = {64};  // a norm
  EXPECT_FALSE(row_pairs_fit(vec.view));
  TensorView empty;
  empty.dtype = DType::BF16;
  empty.shape = {2, 32};
  EXPECT_FALSE(row_pairs_fit(empty));  // no data
}

TEST(RowPairs, DefaultIsPairsOnZen5WithAvx512Only) {
  EXPECT_TRUE(matmul_default_bf16_row_pairs(0x1A, true));
  EXPECT_FALSE(matmul_default_bf16_row_pairs(0x1A, false));
  EXPECT_FALSE(matmul_default_bf16_row_pairs(0x19, true));  // Zen 4: not measured
  EXPECT_FALSE(matmul_default_bf16_row_pairs(0, true));     // not AMD
  matmul_force_layout(MatmulLayout::kRows);
  EXPECT_FALSE(matmul_bf16_row_pairs());
  matmul_force_layout(MatmulLayout::kRowPairs);
  EXPECT_TRUE(matmul_bf16_row_pairs());
  matmul_force_layout(MatmulLayout::kDefault);
}

// Random BF16 weights [rows, cols] and activations [n, cols].
struct Product {
  std::vector<uint16_t> w;
  std::vector<float> x;
  TensorView view;
  Product(int64_t rows, int64_t cols, int64_t n) : w(rows * cols), x(n * cols) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (uint16_t& v : w) v = f32_to_bf16(normal(rng) / std::sqrt(static_cast<float>(cols)));
    for (float& v : x) v = normal(rng);
    view.name = "w";
    view.dtype = DType::BF16;
    view.shape = {rows, cols};
    view.data = w.data();
    view.nbytes = w.size() * 2;
  }
  std::vector<float> run(int64_t n) const {
    std::vector<float> out(n * view.rows());
    matmul_weights(out.data(), x.data(), view, n);
    return out;
  }
};

// The planted errors: a matrix marked as pairs whose bytes were never repacked, and one
// repacked with the two rows of each pair swapped. On the best path, for one token and for
// eight, both give other outputs than the plain rows, so a kernel that read pairs as rows (or
// took a pair's rows the wrong way round) fails the bit-identity test.
TEST(RowPairs, MisaddressedPairsGiveOtherOutputs) {
  const int64_t rows = 24, cols = 1024;
  for (int64_t n : {1, 8}) {
    Product plain(rows, cols, n);
    const std::vector<float> want = plain.run(n);

    Product never_packed(rows, cols, n);
    never_packed.view.layout = RowLayout::kRowPairs;
    EXPECT_NE(std::memcmp(never_packed.run(n).data(), want.data(), want.size() * 4), 0) << n;

    Product swapped(rows, cols, n);
    for (int64_t p = 0; p < rows / 2; p++) {
      std::swap_ranges(swapped.w.begin() + 2 * p * cols, swapped.w.begin() + (2 * p + 1) * cols,
                       swapped.w.begin() + (2 * p + 1) * cols);
    }
    row_pairs_pack(swapped.w.data(), rows, cols);
    swapped.view.layout = RowLayout::kRowPairs;
    EXPECT_NE(std::memcmp(swapped.run(n).data(), want.data(), want.size() * 4), 0) << n;

    Product right(rows, cols, n);  // and the right repacking gives the same bits
    row_pairs_pack(right.w.data(), rows, cols);
    right.view.layout = RowLayout::kRowPairs;
    EXPECT_EQ(std::memcmp(right.run(n).data(), want.data(), want.size() * 4), 0) << n;
  }
}

}  // namespace
}  // namespace speclab
