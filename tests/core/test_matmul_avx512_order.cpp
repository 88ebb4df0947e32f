// The avx512 path's summation order, written out in scalars: every output of matmul_weights on
// that path has exactly the bits of the order described at the top of core/matmul_avx512.cpp
// (one 16-lane chain of FMAs over the row's 16-column slices in order, BF16 steps as their even
// then odd columns; the fixed 16-lane tree; the scalar tail), for one token (whole rows,
// prefetched or not, and segments) and for calls of 2, 4, 13 and 32 tokens (4 x 4 and 4 x 6
// tiles, passes and groups of unequal sizes). Two planted wrong orders (two chains, over the
// even and the odd slices, added lane by lane: an order tried for one-token speed; the lanes
// summed in order instead of the tree) are rejected on the same outputs, so the check can tell
// the orders apart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/threads.h"

namespace speclab {
namespace {

enum class Order { kOneChain, kTwoChains, kLanesInOrder };

// The tree of matmul_avx512's hsum over 16 lanes: halves of 8, then of 4, then lanes {0, 2}
// and {1, 3}, then those two.
float tree16(const float* v) {
  float s8[8], s4[4];
  for (int l = 0; l < 8; l++) s8[l] = v[l] + v[l + 8];
  for (int l = 0; l < 4; l++) s4[l] = s8[l] + s8[l + 4];
  const float a = s4[0] + s4[2], b = s4[1] + s4[3];
  return a + b;
}

// Column of lane l in half h of the full step at column i: BF16 steps are split into even and
// odd columns, the other dtypes into [i, i + 16) and [i + 16, i + 32).
int64_t step_column(DType dtype, int64_t i, int h, int l) {
  return dtype == DType::BF16 ? i + 2 * l + h : i + 16 * h + l;
}

// One output: row w (n_in FP32 weights, exactly dequantized) times activations x, in `order`
// (kOneChain: the path's; the others planted).
float output_in_order(Order order, DType dtype, const float* w, const float* x, int64_t n_in) {
  float acc[2][16] = {};
  const int64_t n32 = n_in / 32 * 32, n16 = n_in / 16 * 16;
  for (int64_t i = 0; i < n32; i += 32) {
    for (int h = 0; h < 2; h++) {
      float* a = acc[order == Order::kTwoChains ? h : 0];
      for (int l = 0; l < 16; l++) {
        const int64_t j = step_column(dtype, i, h, l);
        a[l] = std::fmaf(w[j], x[j], a[l]);
      }
    }
  }
  for (int l = 0; n16 > n32 && l < 16; l++)
    acc[0][l] = std::fmaf(w[n32 + l], x[n32 + l], acc[0][l]);
  float tail = 0.0f;
  for (int64_t j = n16; j < n_in; j++) tail = std::fmaf(w[j], x[j], tail);
  float sum[16];
  for (int l = 0; l < 16; l++)
    sum[l] = order == Order::kTwoChains ? acc[0][l] + acc[1][l] : acc[0][l];
  if (order == Order::kLanesInOrder) {
    float s = 0.0f;
    for (int l = 0; l < 16; l++) s += sum[l];
    return s + tail;
  }
  return tree16(sum) + tail;
}

struct OrderCase {
  DType dtype;
  int64_t n_in;
};

class Avx512Order : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!matmul_force_isa(MatmulIsa::kAvx512)) GTEST_SKIP() << "this CPU lacks AVX-512";
  }
  void TearDown() override {
    matmul_force_streaming(MatmulStreaming::kDefault);
    matmul_force_isa(MatmulIsa::kBest);
    threads_set(0);
  }
};

TEST_F(Avx512Order, EveryOutputHasTheDocumentedOrderBits) {
  // BF16 1051: 32 full steps, a half step (chain 0) and 11 columns of scalar tail; 4115: long
  // rows (several rows at a time without prefetching ahead, one at a time with it); F32 1031: 7
  // columns of scalar tail; F16 1040: a half step and no tail; whole quantization blocks and
  // k-quant super-blocks.
  const OrderCase cases[] = {{DType::BF16, 1051}, {DType::BF16, 3072}, {DType::BF16, 4115},
                             {DType::F32, 1031},  {DType::F16, 1040},  {DType::Q8_0, 1056},
                             {DType::Q4_0, 1056}, {DType::Q4_1, 1056}, {DType::Q4_K, 768},
                             {DType::Q6_K, 2304}};
  const int64_t n_out = 29;  // partial work items (12 rows) and row tiles (4 rows)
  const MatmulStreaming streamings[] = {MatmulStreaming::kSegments, MatmulStreaming::kWholeRows,
                                        MatmulStreaming::kWholeRowsAhead};
  threads_set(1);
  for (const OrderCase& c : cases) {
    std::mt19937 rng(91);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(n_out * c.n_in);
    for (float& v : values) v = normal(rng) / std::sqrt(static_cast<float>(c.n_in));
    const size_t row_bytes = dtype_row_bytes(c.dtype, c.n_in);
    std::vector<uint8_t> bytes(row_bytes * n_out);
    std::vector<float> w(n_out * c.n_in);  // the stored weights, dequantized exactly
    for (int64_t r = 0; r < n_out; r++) {
      dtype_from_f32(c.dtype, values.data() + r * c.n_in, bytes.data() + r * row_bytes, c.n_in);
      dtype_to_f32(c.dtype, bytes.data() + r * row_bytes, w.data() + r * c.n_in, c.n_in);
    }
    TensorView view;
    view.name = "w";
    view.dtype = c.dtype;
    view.shape = {n_out, c.n_in};
    view.data = bytes.data();
    view.nbytes = bytes.size();
    const int64_t max_tokens = 32;
    std::vector<float> x(max_tokens * c.n_in);
    for (float& v : x) v = normal(rng);

    for (MatmulStreaming streaming : streamings) {
      matmul_force_streaming(streaming);
      for (int64_t n_tokens : {1, 2, 4, 13, 32}) {
        const std::string what = std::string(dtype_name(c.dtype)) +
                                 " n_in=" + std::to_string(c.n_in) +
                                 " tokens=" + std::to_string(n_tokens) +
                                 " streaming=" + std::to_string(static_cast<int>(streaming));
        std::vector<float> out(n_tokens * n_out, NAN);
        matmul_weights(out.data(), x.data(), view, n_tokens);
        int64_t differ = 0, two_chains_differ = 0, lanes_in_order_differ = 0;
        for (int64_t t = 0; t < n_tokens; t++) {
          for (int64_t r = 0; r < n_out; r++) {
            const float* wr = w.data() + r * c.n_in;
            const float* xt = x.data() + t * c.n_in;
            const float got = out[t * n_out + r];
            const float want = output_in_order(Order::kOneChain, c.dtype, wr, xt, c.n_in);
            if (std::memcmp(&got, &want, sizeof got) != 0 && differ++ < 3) {
              ADD_FAILURE() << what << " token " << t << " row " << r << ": " << got
                            << ", the documented order gives " << want;
            }
            const float two = output_in_order(Order::kTwoChains, c.dtype, wr, xt, c.n_in);
            const float lanes = output_in_order(Order::kLanesInOrder, c.dtype, wr, xt, c.n_in);
            two_chains_differ += std::memcmp(&got, &two, sizeof got) != 0;
            lanes_in_order_differ += std::memcmp(&got, &lanes, sizeof got) != 0;
          }
        }
        EXPECT_EQ(differ, 0) << what;
        // The planted orders round differently on a good share of the outputs (each differs
        // from the documented order in where some FP32 sums round).
        EXPECT_GT(two_chains_differ, n_tokens * n_out / 4) << what << ": two chains";
        EXPECT_GT(lanes_in_order_differ, n_tokens * n_out / 4) << what << ": lanes in order";
      }
    }
  }
}

}  // namespace
}  // namespace speclab
