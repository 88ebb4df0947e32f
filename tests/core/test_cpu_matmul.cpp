// matmul_weights (row-outer, per-ISA fast path) against matmul_weights_ref (dequantize with
// dtype_to_f32, triple loop in double), for every weight dtype and batch sizes 1..16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/matmul_int8.h"
#include "core/row_pairs.h"
#include "core/threads.h"

namespace speclab {
namespace {

// A matrix shape of a test case list: weights of `dtype`, rows of n_in columns.
struct MatrixCase {
  DType dtype;
  int64_t n_in;
};

struct OwnedWeights {
  std::vector<uint8_t> bytes;
  TensorView view;
};

// A [n_out, n_in] matrix ~ N(0, 1/sqrt(n_in)) stored in dtype.
OwnedWeights random_weights(DType dtype, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(n_in)));
  std::vector<float> values(n_out * n_in);
  for (float& v : values) v = normal(rng);
  OwnedWeights w;
  w.bytes.resize(dtype_row_bytes(dtype, n_in) * n_out);
  for (int64_t r = 0; r < n_out; r++) {
    dtype_from_f32(dtype, values.data() + r * n_in,
                   w.bytes.data() + r * dtype_row_bytes(dtype, n_in), n_in);
  }
  w.view.name = "w";
  w.view.dtype = dtype;
  w.view.shape = {n_out, n_in};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

std::vector<float> random_activations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// Both sides see identical FP32 weights (the fast dequantization is exact), so the only
// difference is FP32 vs double accumulation over n_in products of O(1/sqrt(n_in)) terms:
// the error is ~ sqrt(n_in) * 6e-8 * O(1); atol 1e-4 + 1e-4 * |ref| leaves a wide margin
// and is still far below a wrong-block or wrong-nibble error (~1e-2 and up).
constexpr float kAtol = 1e-4f;
constexpr float kRtol = 1e-4f;

void expect_close(const std::vector<float>& got, const std::vector<float>& ref,
                  const std::string& what) {
  int mismatches = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    const float tol = kAtol + std::fabs(ref[i]) * kRtol;
    if (!(std::fabs(got[i] - ref[i]) <= tol)) {
      if (mismatches < 5) {
        ADD_FAILURE() << what << ": out[" << i << "] = " << got[i] << ", ref " << ref[i] << " (tol "
                      << tol << ")";
      }
      mismatches++;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// Runs a test body once per kernel path; paths this CPU lacks are skipped (and say so).
class CpuMatmulPaths : public ::testing::TestWithParam<MatmulIsa> {
 protected:
  void SetUp() override {
    if (!matmul_force_isa(GetParam())) GTEST_SKIP() << "this CPU lacks the instructions";
  }
  void TearDown() override { matmul_force_isa(MatmulIsa::kBest); }
};
INSTANTIATE_TEST_SUITE_P(Isa, CpuMatmulPaths,
                         ::testing::Values(MatmulIsa::kGeneric, MatmulIsa::kAvx2,
                                           MatmulIsa::kAvx512, MatmulIsa::kAvx512Bf16,
                                           MatmulIsa::kAvx512Vnni, MatmulIsa::kAmxBf16,
                                           MatmulIsa::kBest),
                         [](const auto& info) {
                           switch (info.param) {
                             case MatmulIsa::kGeneric:
                               return "generic";
                             case MatmulIsa::kAvx2:
                               return "avx2";
                             case MatmulIsa::kAvx512:
                               return "avx512";
                             case MatmulIsa::kAvx512Bf16:
                               return "avx512bf16";
                             case MatmulIsa::kAvx512Vnni:
                               return "avx512vnni";
                             case MatmulIsa::kAmxBf16:
                               return "amxbf16";
                             default:
                               return "best";
                           }
                         });

// The reference fed the activations the path uses: rounded to BF16 where the path dots BF16
// weights with vdpbf16ps, quantized to int8 blocks where it dots quantized weights in integers
// (avx512vnni: then only the summation order differs, and the same tolerance holds).
void reference_as_path(float* out, const std::vector<float>& x, const TensorView& w,
                       int64_t n_tokens) {
  if (matmul_quantizes_activations(w.dtype)) {
    matmul_weights_ref_int8(out, x.data(), w, n_tokens);
    return;
  }
  std::vector<float> xr = x;
  if (matmul_rounds_activations_to_bf16(w.dtype)) {
    for (float& v : xr) v = bf16_to_f32(f32_to_bf16(v));
  }
  matmul_weights_ref(out, xr.data(), w, n_tokens);
}

TEST_P(CpuMatmulPaths, MatchesReferenceForEveryDtypeAndBatch) {
  const DType dtypes[] = {DType::F32,  DType::F16,  DType::BF16,
                          DType::Q8_0, DType::Q4_0, DType::Q4_1};
  const int64_t batches[] = {1, 2, 3, 4, 8, 16};
  struct Shape {
    int64_t n_out, n_in;
  };
  // Odd row counts leave partial row blocks; 2080 = 65 * 32 leaves no 16-float remainder.
  const Shape shapes[] = {{37, 64}, {129, 256}, {5, 1024}, {6, 2080}};
  std::printf("matmul isa: %s, threads %d\n", matmul_isa(), threads_get());
  for (DType dtype : dtypes) {
    for (const Shape& s : shapes) {
      OwnedWeights w = random_weights(dtype, s.n_out, s.n_in, 7);
      for (int64_t n_tokens : batches) {
        std::vector<float> x = random_activations(n_tokens * s.n_in, 11 + n_tokens);
        std::vector<float> got(n_tokens * s.n_out, NAN), ref(n_tokens * s.n_out, NAN);
        matmul_weights(got.data(), x.data(), w.view, n_tokens);
        reference_as_path(ref.data(), x, w.view, n_tokens);
        expect_close(got, ref,
                     std::string(dtype_name(dtype)) + " " + std::to_string(s.n_out) + "x" +
                         std::to_string(s.n_in) + " n_tokens=" + std::to_string(n_tokens));
      }
    }
  }
}

TEST_P(CpuMatmulPaths, FloatRowsNotAMultipleOfTheVectorWidth) {
  // 71 = 2 * 32 + 7 and 87 = 2 * 32 + 16 + 7: the 32-wide loop, the 16-wide step, the tail.
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t n_in : {71, 87}) {
      OwnedWeights w = random_weights(dtype, 9, n_in, 3);
      for (int64_t n_tokens : {1, 5, 9}) {
        std::vector<float> x = random_activations(n_tokens * n_in, 5);
        std::vector<float> got(n_tokens * 9), ref(n_tokens * 9);
        matmul_weights(got.data(), x.data(), w.view, n_tokens);
        reference_as_path(ref.data(), x, w.view, n_tokens);
        expect_close(got, ref,
                     std::string(dtype_name(dtype)) + " 9x" + std::to_string(n_in) +
                         " n_tokens=" + std::to_string(n_tokens));
      }
    }
  }
}

// The BF16 dot path's rounding of the activations stays within what BF16 weights already
// cost: |error| <= 2^-8 * sqrt(sum_i (w_i x_i)^2) * 4 (a loose bound on the random walk of
// per-product relative errors of 2^-9), checked against the exact FP32-activation reference.
TEST_P(CpuMatmulPaths, Bf16ActivationRoundingIsBounded) {
  const int64_t n_out = 64, n_in = 2048, n_tokens = 3;
  OwnedWeights w = random_weights(DType::BF16, n_out, n_in, 41);
  std::vector<float> x = random_activations(n_tokens * n_in, 42);
  std::vector<float> got(n_tokens * n_out), ref(n_tokens * n_out);
  matmul_weights(got.data(), x.data(), w.view, n_tokens);
  matmul_weights_ref(ref.data(), x.data(), w.view, n_tokens);
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < n_out; r++) {
    dtype_to_f32(DType::BF16, w.view.row_ptr(r), row.data(), n_in);
    for (int64_t t = 0; t < n_tokens; t++) {
      double ss = 0.0;
      for (int64_t i = 0; i < n_in; i++) ss += std::pow(double(row[i]) * x[t * n_in + i], 2);
      const double bound = 4.0 * std::sqrt(ss) / 256.0 + 1e-4;
      EXPECT_LE(std::fabs(got[t * n_out + r] - ref[t * n_out + r]), bound)
          << "row " << r << " token " << t;
    }
  }
}

// The fast row conversion must give exactly the reference's values, so quantized models
// produce the same numbers whichever path runs.
// (K-quants: rows of two super-blocks, every sub-block and both nibble halves.)
TEST_P(CpuMatmulPaths, FastRowDequantizationIsExact) {
  const DType dtypes[] = {DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                          DType::Q4_1, DType::Q4_K, DType::Q6_K};
  for (DType dtype : dtypes) {
    const int64_t n_in = dtype_block_size(dtype) == kSuperBlock ? 2 * kSuperBlock : 96;
    OwnedWeights w = random_weights(dtype, 3, n_in, 21);
    std::vector<float> fast(n_in), ref(n_in);
    for (int64_t r = 0; r < 3; r++) {
      weights_row_to_f32(fast.data(), w.view, r);
      dtype_to_f32(dtype, w.view.row_ptr(r), ref.data(), n_in);
      for (int64_t i = 0; i < n_in; i++) {
        ASSERT_EQ(std::memcmp(&fast[i], &ref[i], sizeof(float)), 0)
            << dtype_name(dtype) << " row " << r << " col " << i << ": " << fast[i] << " fast, "
            << ref[i] << " reference";
      }
    }
  }
}

// Batch invariance: a token's outputs are bit-identical whether it is multiplied alone or in a
// batch (groups of four and a remainder take different code paths with the same sum order).
TEST_P(CpuMatmulPaths, BatchedRowsAreBitIdenticalToSingleTokens) {
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_1};
  for (DType dtype : dtypes) {
    for (int64_t n_in : {64, 96, 200, 1024}) {
      if (n_in % dtype_block_size(dtype) != 0) continue;
      const int64_t n_out = 13, n_tokens = 16;
      OwnedWeights w = random_weights(dtype, n_out, n_in, 31);
      std::vector<float> x = random_activations(n_tokens * n_in, 32);
      std::vector<float> batched(n_tokens * n_out), single(n_out);
      matmul_weights(batched.data(), x.data(), w.view, n_tokens);
      for (int64_t t = 0; t < n_tokens; t++) {
        matmul_weights(single.data(), x.data() + t * n_in, w.view, 1);
        for (int64_t r = 0; r < n_out; r++) {
          ASSERT_EQ(batched[t * n_out + r], single[r])
              << dtype_name(dtype) << " n_in=" << n_in << " token " << t << " row " << r;
        }
      }
    }
  }
}

// Outputs do not depend on the thread count either (a static partition by rows; each output
// is reduced by one thread in the same order), on products big enough to run in parallel.
TEST_P(CpuMatmulPaths, ParallelAndBatchedEqualSingleThreadedSingleToken) {
  for (DType dtype : {DType::BF16, DType::Q8_0, DType::Q4_1}) {
    const int64_t n_out = 203, n_in = 1024, n_tokens = 9;
    OwnedWeights w = random_weights(dtype, n_out, n_in, 51);
    std::vector<float> x = random_activations(n_tokens * n_in, 52);
    std::vector<float> batched(n_tokens * n_out), single(n_out);
    threads_set(2);
    matmul_weights(batched.data(), x.data(), w.view, n_tokens);
    threads_set(1);
    for (int64_t t = 0; t < n_tokens; t++) {
      matmul_weights(single.data(), x.data() + t * n_in, w.view, 1);
      for (int64_t r = 0; r < n_out; r++) {
        ASSERT_EQ(batched[t * n_out + r], single[r])
            << dtype_name(dtype) << " token " << t << " row " << r;
      }
    }
    threads_set(0);
  }
}

// Long rows run in several column segments (the AVX-512 path parks the accumulators between
// segments) and 5 to 8 tokens in two groups over each segment: every token of every batch size
// 1..12 still gets the bits it gets alone, on 1 and 2 threads, and matches the reference. Row
// lengths with a 16-wide remainder and a scalar tail (float rows), and 129 or 257 blocks
// (segments of unequal block counts); 29 rows leave a partial work item and a partial tile.
TEST_P(CpuMatmulPaths, LongRowsInSegmentsAreBatchAndThreadInvariant) {
  const MatrixCase cases[] = {{DType::BF16, 4149}, {DType::F32, 3088},  {DType::F16, 2069},
                              {DType::Q8_0, 4128}, {DType::Q4_0, 8224}, {DType::Q4_1, 8224}};
  const int64_t n_out = 29;
  for (const MatrixCase& c : cases) {
    OwnedWeights w = random_weights(c.dtype, n_out, c.n_in, 61);
    std::vector<float> x = random_activations(12 * c.n_in, 62);
    std::vector<float> single(12 * n_out), ref(12 * n_out);
    threads_set(1);
    for (int64_t t = 0; t < 12; t++) {
      matmul_weights(single.data() + t * n_out, x.data() + t * c.n_in, w.view, 1);
    }
    reference_as_path(ref.data(), x, w.view, 12);
    expect_close(single, ref, std::string(dtype_name(c.dtype)) + " n_in=" + std::to_string(c.n_in));
    for (int threads : {1, 2}) {
      threads_set(threads);
      for (int64_t k = 2; k <= 12; k++) {
        std::vector<float> batched(k * n_out);
        matmul_weights(batched.data(), x.data(), w.view, k);
        for (int64_t i = 0; i < k * n_out; i++) {
          ASSERT_EQ(batched[i], single[i])
              << dtype_name(c.dtype) << " n_in=" << c.n_in << " k=" << k << " threads=" << threads
              << " token " << i / n_out << " row " << i % n_out;
        }
      }
    }
    threads_set(0);
  }
}

// Many tokens at once (continuous batching verifies b requests x k tokens in one call): every
// token's outputs are the bits it gets alone, for token counts that fill no register tile, one,
// several and several chunks (the avx2 path: tiles of 3 tokens, up to 3 tokens unpacked, 64
// tokens per chunk; avx512: up to 8 tokens in groups of 4, more in passes of 12 as groups of
// 6, with partial groups and passes at 9, 13, 18 and 21; chunks of 16 or more), on 1 and 2
// threads.
// Shapes: 29 rows leave partial work items and row tiles; 77 columns are less than a segment
// with a scalar tail, 1031 = 2 x 512 + 7 and 1544 = 3 x 512 + 8 end on a partial segment (a
// tail, a single slice), 1056 = 33 blocks of 32 and 768 = 3 super-blocks for quantized rows;
// 2304 = 9 super-blocks, several segments of whole super-blocks even for one token (k-quants
// are read a super-block at a time, its scales decoded once).
// Each batch is also held to the reference within 1e-4 + 1e-4 * |ref| (FP32 vs double sums).
TEST_P(CpuMatmulPaths, EveryTokenCountGivesEachTokenItsSingleTokenBits) {
  // BF16 1051: full steps in even/odd order, then a half step and 11 columns in column order.
  // BF16 1024 and 3072: whole 32-column steps, on AMX tiles on the amxbf16 path (chunks of 64
  // and 21 tokens: one and two 16-token tiles a pass, several passes, several chunks).
  const MatrixCase cases[] = {{DType::BF16, 77},   {DType::BF16, 1031}, {DType::BF16, 1544},
                              {DType::BF16, 1051}, {DType::BF16, 1024}, {DType::BF16, 3072},
                              {DType::F32, 1031},  {DType::F16, 1031},  {DType::Q8_0, 1056},
                              {DType::Q4_0, 1056}, {DType::Q4_1, 1056}, {DType::Q4_K, 768},
                              {DType::Q6_K, 768},  {DType::Q4_K, 2304}, {DType::Q6_K, 2304}};
  // 45 rows: AMX's 64-row item as two full 16-row blocks and one of 13 (every pass shape).
  const int64_t n_out = 45;
  const int64_t token_counts[] = {2, 3, 5, 8, 9, 12, 13, 18, 21, 32, 64, 130};
  const int64_t max_tokens = 130;
  for (const MatrixCase& c : cases) {
    const std::string what = std::string(dtype_name(c.dtype)) + " n_in=" + std::to_string(c.n_in);
    OwnedWeights w = random_weights(c.dtype, n_out, c.n_in, 71);
    std::vector<float> x = random_activations(max_tokens * c.n_in, 72);
    std::vector<float> single(max_tokens * n_out, NAN);
    threads_set(1);
    for (int64_t t = 0; t < max_tokens; t++) {
      matmul_weights(single.data() + t * n_out, x.data() + t * c.n_in, w.view, 1);
    }
    for (int threads : {1, 2}) {
      threads_set(threads);
      for (int64_t n : token_counts) {
        std::vector<float> batched(n * n_out, NAN);
        matmul_weights(batched.data(), x.data(), w.view, n);
        int64_t differ = 0;
        for (int64_t i = 0; i < n * n_out; i++) {
          if (std::memcmp(&batched[i], &single[i], sizeof(float)) != 0) {
            if (differ++ < 3) {
              ADD_FAILURE() << what << " n_tokens=" << n << " threads=" << threads << " token "
                            << i / n_out << " row " << i % n_out << ": " << batched[i]
                            << " batched, " << single[i] << " alone";
            }
          }
        }
        EXPECT_EQ(differ, 0) << what << " n_tokens=" << n << " threads=" << threads;
        if (threads == 2) {
          std::vector<float> ref(n * n_out);
          reference_as_path(ref.data(), std::vector<float>(x.begin(), x.begin() + n * c.n_in),
                            w.view, n);
          expect_close(batched, ref, what + " n_tokens=" + std::to_string(n));
        }
      }
    }
    threads_set(0);
  }
}

// A one-token product (a decode or draft step) gives the same bits whichever way the avx512
// path streams the rows (MatmulStreaming: 4-row tiles over prefetched segments, or each row
// whole), on 1 and 2 threads, for every fused dtype; and is held to the reference. So do calls
// of 2 to 5 tokens (a verification of a few drafts), which the avx512bf16 path reads whole (up
// to 6 tokens) and the int8 path (avx512vnni) while a row's records for all the tokens fit in
// 16 KB (up to 4 tokens: with 1056 columns every int8 dtype does, with 2304 Q4_K does; with
// 4352 Q6_K up to 3, with 4128 Q8_0 only one); on the avx512 path they take segments either way.
// The other paths ignore the setting. 33 rows: two full work items of 12 and one of 9 (a 6-row
// tile of long rows and 3 rows alone, where the full items of long F32, F16 and BF16 rows take
// one 12-row tile); columns as above (a scalar tail, a half step at the end of even/odd BF16
// rows at 1051, whole k-quant super-blocks) and rows long enough (more than 4096 columns) to be
// read several rows at a time (one at a time when prefetching ahead): 4115 = 128 steps, a half
// step and 3 columns.
TEST_P(CpuMatmulPaths, FewTokenProductsHaveTheSameBitsWhicheverWayTheRowsStream) {
  const MatrixCase cases[] = {{DType::BF16, 77},   {DType::BF16, 1031}, {DType::BF16, 1051},
                              {DType::BF16, 4115}, {DType::F32, 1031},  {DType::F32, 4115},
                              {DType::F16, 4115},  {DType::Q8_0, 1056}, {DType::Q8_0, 4128},
                              {DType::Q4_0, 1056}, {DType::Q4_1, 1056}, {DType::Q4_K, 2304},
                              {DType::Q6_K, 4352}};
  const int64_t n_out = 33;
  for (const MatrixCase& c : cases) {
    OwnedWeights w = random_weights(c.dtype, n_out, c.n_in, 91);
    const std::vector<float> x = random_activations(5 * c.n_in, 92);
    for (int64_t n = 1; n <= 5; n++) {
      const std::string what = std::string(dtype_name(c.dtype)) +
                               " n_in=" + std::to_string(c.n_in) + " n_tokens=" + std::to_string(n);
      for (int threads : {1, 2}) {
        threads_set(threads);
        std::vector<float> segments(n * n_out, NAN), whole(n * n_out, NAN);
        matmul_force_streaming(MatmulStreaming::kSegments);
        matmul_weights(segments.data(), x.data(), w.view, n);
        const std::string segments_name = matmul_one_token_streaming(c.dtype, c.n_in);
        matmul_force_streaming(MatmulStreaming::kWholeRows);
        matmul_weights(whole.data(), x.data(), w.view, n);
        const std::string whole_name = matmul_one_token_streaming(c.dtype, c.n_in);
        matmul_force_streaming(MatmulStreaming::kDefault);
        // "AMX tiles": BF16 on amxbf16, which reads rows it cannot tile as avx512bf16 does.
        if (segments_name != "n/a" && segments_name != "AMX tiles") {
          EXPECT_EQ(segments_name, "segments") << what;
          EXPECT_EQ(whole_name, "whole rows") << what;
        }
        for (int64_t i = 0; i < n * n_out; i++) {
          EXPECT_EQ(std::memcmp(&segments[i], &whole[i], sizeof(float)), 0)
              << what << " threads=" << threads << " token " << i / n_out << " row " << i % n_out
              << ": " << segments[i] << " segments, " << whole[i] << " whole rows";
        }
        // Whole rows prefetching ahead (the Zen 5 default for BF16): the same bits again; the
        // prefetch reaches past the matrix's last row, which must not fault.
        std::vector<float> ahead(n * n_out, NAN);
        matmul_force_streaming(MatmulStreaming::kWholeRowsAhead);
        matmul_weights(ahead.data(), x.data(), w.view, n);
        const std::string ahead_name = matmul_one_token_streaming(c.dtype, c.n_in);
        matmul_force_streaming(MatmulStreaming::kDefault);
        if (segments_name != "n/a" && segments_name != "AMX tiles") {
          const bool plain_rows =
              matmul_quantizes_activations(c.dtype) || matmul_rounds_activations_to_bf16(c.dtype);
          EXPECT_EQ(ahead_name, plain_rows ? "whole rows" : "whole rows, prefetched ahead") << what;
        }
        for (int64_t i = 0; i < n * n_out; i++) {
          EXPECT_EQ(std::memcmp(&segments[i], &ahead[i], sizeof(float)), 0)
              << what << " threads=" << threads << " token " << i / n_out << " row " << i % n_out
              << ": " << segments[i] << " segments, " << ahead[i] << " whole rows ahead";
        }
        std::vector<float> ref(n * n_out);
        reference_as_path(ref.data(), std::vector<float>(x.begin(), x.begin() + n * c.n_in), w.view,
                          n);
        expect_close(whole, ref, what + " whole rows");
      }
    }
    threads_set(0);
  }
}

// Products over prefetched column segments give the same bits whether the software prefetch
// puts the next segment's weights into L1 or into L2 only (MatmulPrefetch), on 1 and 2 threads,
// for every fused dtype and token counts that take every segment kernel: 1 (forced to
// segments), 2 to 8 (passes of 8: 4 x 4 tiles in two groups), 9 and 17 (passes of 12 in groups
// of 6); and are held to the reference. The avx512bf16 and avx512vnni paths have their own
// segment kernels (vdpbf16ps, the int8 dot products), covered by the same calls; the generic
// and avx2 paths ignore the setting ("n/a").
TEST_P(CpuMatmulPaths, SegmentProductsHaveTheSameBitsWhereverThePrefetchPutsTheWeights) {
  const MatrixCase cases[] = {{DType::BF16, 1051}, {DType::BF16, 3072}, {DType::F32, 1031},
                              {DType::F16, 1056},  {DType::Q8_0, 1056}, {DType::Q4_0, 1056},
                              {DType::Q4_1, 1056}, {DType::Q4_K, 2304}, {DType::Q6_K, 2304}};
  const int64_t n_out = 33;
  const int64_t token_counts[] = {1, 2, 3, 5, 8, 9, 17};
  matmul_force_streaming(MatmulStreaming::kSegments);
  for (const MatrixCase& c : cases) {
    OwnedWeights w = random_weights(c.dtype, n_out, c.n_in, 95);
    const std::vector<float> x = random_activations(17 * c.n_in, 96);
    for (int64_t n : token_counts) {
      const std::string what = std::string(dtype_name(c.dtype)) +
                               " n_in=" + std::to_string(c.n_in) + " n_tokens=" + std::to_string(n);
      for (int threads : {1, 2}) {
        threads_set(threads);
        std::vector<float> to_l1(n * n_out, NAN), to_l2(n * n_out, NAN);
        matmul_force_prefetch(MatmulPrefetch::kToL1);
        matmul_weights(to_l1.data(), x.data(), w.view, n);
        const std::string l1_name = matmul_segment_prefetch();
        matmul_force_prefetch(MatmulPrefetch::kToL2);
        matmul_weights(to_l2.data(), x.data(), w.view, n);
        const std::string l2_name = matmul_segment_prefetch();
        matmul_force_prefetch(MatmulPrefetch::kDefault);
        if (l1_name != "n/a") {
          EXPECT_EQ(l1_name, "L1") << what;
          EXPECT_EQ(l2_name, "L2") << what;
        }
        for (int64_t i = 0; i < n * n_out; i++) {
          EXPECT_EQ(std::memcmp(&to_l1[i], &to_l2[i], sizeof(float)), 0)
              << what << " threads=" << threads << " token " << i / n_out << " row " << i % n_out
              << ": " << to_l1[i] << " into L1, " << to_l2[i] << " into L2";
        }
        std::vector<float> ref(n * n_out);
        reference_as_path(ref.data(), std::vector<float>(x.begin(), x.begin() + n * c.n_in), w.view,
                          n);
        expect_close(to_l2, ref, what + " into L2");
      }
    }
  }
  matmul_force_streaming(MatmulStreaming::kDefault);
  threads_set(0);
}

// The step team's work items (matmul_items, any split of the items among threads, activations
// packed once per kind and reused across matrices) give matmul_weights' bits for 1..16 tokens.
TEST_P(CpuMatmulPaths, WorkItemsGiveMatmulWeightsBits) {
  const DType dtypes[] = {DType::BF16, DType::F32, DType::F16, DType::Q8_0, DType::Q4_1};
  // 141 rows: several items on every path (AMX's 64-row items too), the last one partial.
  const int64_t n_out = 141, n_in = 1056;
  std::vector<OwnedWeights> ws;
  for (DType dtype : dtypes) ws.push_back(random_weights(dtype, n_out, n_in, 81));
  std::vector<float> x = random_activations(kMatmulItemsMaxTokens * n_in, 82);
  MatmulActivations a;
  for (int64_t n = 1; n <= kMatmulItemsMaxTokens; n++) {
    a.set(x.data(), n, n_in);
    for (size_t d = 0; d < ws.size(); d++) {
      const TensorView& w = ws[d].view;
      std::vector<float> want(n * n_out, NAN), got(n * n_out, NAN);
      matmul_weights(want.data(), x.data(), w, n);
      const int64_t items = matmul_item_count(w);
      ASSERT_EQ(items, (n_out + matmul_item_rows(w) - 1) / matmul_item_rows(w));
      // Items in two runs, the second first: as two threads might take them.
      matmul_items(got.data(), a, w, items / 2, items);
      matmul_items(got.data(), a, w, 0, items / 2);
      for (int64_t i = 0; i < n * n_out; i++) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << dtype_name(dtypes[d]) << " n_tokens=" << n << " token " << i / n_out << " row "
            << i % n_out << ": " << got[i] << " items, " << want[i] << " matmul_weights";
      }
    }
  }
}

// A hand-computed case: W = [[1, 2], [3, 4], [-1, 0.5]], x = [[1, 1], [2, -1]].
TEST_P(CpuMatmulPaths, HandComputedF32) {
  std::vector<float> wv = {1, 2, 3, 4, -1, 0.5f};
  TensorView w;
  w.dtype = DType::F32;
  w.shape = {3, 2};
  w.data = wv.data();
  w.nbytes = wv.size() * 4;
  std::vector<float> x = {1, 1, 2, -1};
  std::vector<float> out(6);
  matmul_weights(out.data(), x.data(), w, 2);
  EXPECT_EQ(out, (std::vector<float>{3, 7, -0.5f, 0, 2, -2.5f}));
}

// The amxbf16 path puts BF16 matrices of whole 32-column steps on the AMX tiles, in an order of
// its own (each output one FP32 sum over the steps: its bits differ from vdpbf16ps' 16 lanes
// and their tree somewhere in a product this size), and multiplies the others exactly as
// avx512bf16 does: the CpuMatmulPaths cases labelled amxbf16 run the tiles where the shape lets
// them, not a fallback.
TEST(CpuMatmulAmx, WholeStepBf16MatricesGoOnTheTilesTheRestAsAvx512Bf16) {
  if (!matmul_force_isa(MatmulIsa::kAmxBf16)) {
    GTEST_SKIP() << "this CPU lacks AMX-BF16, or Linux did not grant the tile state";
  }
  EXPECT_STREQ(matmul_isa(), "amxbf16");
  EXPECT_STREQ(matmul_one_token_streaming(DType::BF16, 4096), "AMX tiles");
  EXPECT_TRUE(matmul_rounds_activations_to_bf16(DType::BF16));
  for (int64_t n_in : {1024, 1031}) {
    OwnedWeights w = random_weights(DType::BF16, 70, n_in, 91);
    for (int64_t n_tokens : {1, 16, 32}) {
      std::vector<float> x = random_activations(n_tokens * n_in, 92);
      std::vector<float> amx(n_tokens * 70), vdp(n_tokens * 70);
      ASSERT_TRUE(matmul_force_isa(MatmulIsa::kAmxBf16));
      matmul_weights(amx.data(), x.data(), w.view, n_tokens);
      ASSERT_TRUE(matmul_force_isa(MatmulIsa::kAvx512Bf16));
      matmul_weights(vdp.data(), x.data(), w.view, n_tokens);
      int64_t differ = 0;
      for (size_t i = 0; i < amx.size(); i++) differ += std::memcmp(&amx[i], &vdp[i], 4) != 0;
      if (n_in % 32 == 0) {
        EXPECT_GT(differ, 0) << "n_in " << n_in << " n_tokens " << n_tokens
                             << ": the amxbf16 path gave vdpbf16ps' bits everywhere";
      } else {
        EXPECT_EQ(differ, 0) << "n_in " << n_in << " n_tokens " << n_tokens;
      }
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
}

// The one-token streaming each CPU family gets by default (the measured choices of
// docs/cpu-kernels.md), as a pure function of dtype, activations, row length and family: on
// Zen 4 Q8_0 reads rows whole up to 2048 columns (FP32 activations) or 4096 (int8) and in
// segments beyond.
TEST(MatmulDefaultStreaming, FollowsDtypeRowLengthAndCpuFamily) {
  using S = MatmulStreaming;
  constexpr unsigned kZen4 = 0x19, kZen5 = 0x1A, kOther = 0;
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, false, 2048, kZen4), S::kWholeRows);
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, false, 2049, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, false, 3072, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, false, 8192, kZen4), S::kSegments);
  // int8: Q8_0 rows whole up to 4096 columns, every other dtype whole at every length.
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, true, 4096, kZen4), S::kWholeRows);
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, true, 4097, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::Q8_0, true, 8192, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::Q4_K, true, 8192, kZen4), S::kWholeRows);
  EXPECT_EQ(matmul_default_streaming(DType::Q6_K, true, 8192, kZen4), S::kWholeRows);
  // BF16 with FP32 activations: whole up to 3072 columns (the 8192-column down projections in
  // segments).
  EXPECT_EQ(matmul_default_streaming(DType::BF16, false, 2048, kZen4), S::kWholeRows);
  EXPECT_EQ(matmul_default_streaming(DType::BF16, false, 3072, kZen4), S::kWholeRows);
  EXPECT_EQ(matmul_default_streaming(DType::BF16, false, 3073, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::BF16, false, 8192, kZen4), S::kSegments);
  EXPECT_EQ(matmul_default_streaming(DType::BF16, true, 8192, kZen4), S::kWholeRows);
  for (int64_t n_in : {2048, 3072, 8192}) {
    for (DType d : {DType::F32, DType::F16}) {
      EXPECT_EQ(matmul_default_streaming(d, false, n_in, kZen4), S::kWholeRows) << n_in;
    }
    for (DType d : {DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K}) {
      EXPECT_EQ(matmul_default_streaming(d, false, n_in, kZen4), S::kSegments) << n_in;
    }
    EXPECT_EQ(matmul_default_streaming(DType::BF16, false, n_in, kZen5), S::kWholeRowsAhead);
    EXPECT_EQ(matmul_default_streaming(DType::Q8_0, false, n_in, kZen5), S::kSegments);
    EXPECT_EQ(matmul_default_streaming(DType::Q4_K, true, n_in, kZen5), S::kWholeRows);
    EXPECT_EQ(matmul_default_streaming(DType::Q4_1, true, n_in, kZen5), S::kSegments);
    EXPECT_EQ(matmul_default_streaming(DType::BF16, false, n_in, kOther), S::kSegments);
    EXPECT_EQ(matmul_default_streaming(DType::Q8_0, true, n_in, kOther), S::kSegments);
  }
}

// BF16 matrices stored in row pairs (core/row_pairs.h) give every output the bits of the same
// rows stored plainly, on every path (the avx512 and avx512vnni kernels read the pairs; the
// others copy each item's rows out of them), for every streaming of one token, every token count
// on both sides of the kernels' pass and chunk sizes, on one thread and two, through
// matmul_weights, matmul_items and the row conversion. Shapes: one pair; items of 12 rows with a
// partial last one (26 rows); 8192-column rows (the long-row tiles of plain whole rows).
// test_row_pairs.cpp plants the misaddressings this comparison must catch.
TEST_P(CpuMatmulPaths, RowPairsGiveEveryOutputThePlainRowsBits) {
  struct Shape {
    int64_t n_out, n_in;
  };
  const Shape shapes[] = {{2, 32}, {26, 64}, {34, 1024}, {24, 8192}};
  const int64_t token_counts[] = {1, 2, 3, 4, 5, 8, 9, 13, 16, 17, 33};
  const MatmulStreaming streamings[] = {MatmulStreaming::kSegments, MatmulStreaming::kWholeRows,
                                        MatmulStreaming::kWholeRowsAhead};
  for (const Shape& sh : shapes) {
    OwnedWeights plain = random_weights(DType::BF16, sh.n_out, sh.n_in, 61);
    OwnedWeights paired = random_weights(DType::BF16, sh.n_out, sh.n_in, 61);
    ASSERT_TRUE(row_pairs_fit(paired.view));
    row_pairs_pack(paired.bytes.data(), sh.n_out, sh.n_in);
    paired.view.layout = RowLayout::kRowPairs;
    // (the bytes did move, but where rows are one step: then both layouts are the same bytes)
    if (sh.n_in > 32) {
      ASSERT_NE(plain.bytes, paired.bytes);
    }
    const std::vector<float> x = random_activations(33 * sh.n_in, 62);
    const std::string shape =
        "[" + std::to_string(sh.n_out) + ", " + std::to_string(sh.n_in) + "] ";
    for (MatmulStreaming streaming : streamings) {
      matmul_force_streaming(streaming);
      for (int threads : {1, 2}) {
        threads_set(threads);
        for (int64_t n : token_counts) {
          const std::string what = shape + matmul_one_token_streaming(paired.view) +
                                   " threads=" + std::to_string(threads) +
                                   " n_tokens=" + std::to_string(n);
          std::vector<float> a(n * sh.n_out, NAN), b(n * sh.n_out, NAN);
          matmul_weights(a.data(), x.data(), plain.view, n);
          matmul_weights(b.data(), x.data(), paired.view, n);
          ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
          if (n <= kMatmulItemsMaxTokens) {
            // Items in two halves, the second first (any split among the threads).
            MatmulActivations acts;
            acts.set(x.data(), n, sh.n_in);
            std::vector<float> c(n * sh.n_out, NAN);
            const int64_t items = matmul_item_count(paired.view);
            matmul_items(c.data(), acts, paired.view, items / 2, items);
            matmul_items(c.data(), acts, paired.view, 0, items / 2);
            ASSERT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0)
                << what << " (items)";
          }
        }
      }
    }
    matmul_force_streaming(MatmulStreaming::kDefault);
    threads_set(0);
    std::vector<float> row_a(sh.n_in), row_b(sh.n_in);
    for (int64_t r = 0; r < sh.n_out; r++) {
      weights_row_to_f32(row_a.data(), plain.view, r);
      weights_row_to_f32(row_b.data(), paired.view, r);
      ASSERT_EQ(std::memcmp(row_a.data(), row_b.data(), sh.n_in * sizeof(float)), 0)
          << shape << "row " << r;
    }
    std::vector<float> ref_a(2 * sh.n_out), ref_b(2 * sh.n_out);
    matmul_weights_ref(ref_a.data(), x.data(), plain.view, 2);
    matmul_weights_ref(ref_b.data(), x.data(), paired.view, 2);
    EXPECT_EQ(std::memcmp(ref_a.data(), ref_b.data(), ref_a.size() * sizeof(float)), 0) << shape;
  }
}

}  // namespace
}  // namespace speclab
