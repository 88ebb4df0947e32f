// rmsnorm, swiglu, softmax, RoPE and attention against naive double-precision references
// written differently from the kernels (complex rotation for RoPE, tanh-form sigmoid,
// a full masked score matrix for attention).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_attention.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
#include "core/threads.h"

namespace speclab {
namespace {

std::vector<float> random_vec(int64_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& ref, double atol,
                  double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int mismatches = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double tol = atol + std::fabs(ref[i]) * rtol;
    if (!(std::fabs(got[i] - ref[i]) <= tol)) {
      if (mismatches < 5) {
        ADD_FAILURE() << what << ": [" << i << "] = " << got[i] << ", ref " << ref[i] << " (tol "
                      << tol << ")";
      }
      mismatches++;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// FP32 kernels vs double references over O(1) values: a few ulps of float.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-5;

TEST(CpuOps, RmsnormMatchesReference) {
  const int64_t n_tokens = 3, dim = 67;
  std::vector<float> x = random_vec(n_tokens * dim, 1, 3.0f);
  std::vector<float> w = random_vec(dim, 2);
  std::vector<float> out(n_tokens * dim);
  rmsnorm(out.data(), x.data(), w.data(), n_tokens, dim, 1e-5f);
  std::vector<double> ref(n_tokens * dim);
  for (int64_t t = 0; t < n_tokens; t++) {
    double mean_sq = 0.0;
    for (int64_t i = 0; i < dim; i++) mean_sq += std::pow(x[t * dim + i], 2) / dim;
    for (int64_t i = 0; i < dim; i++) {
      ref[t * dim + i] = w[i] * (x[t * dim + i] / std::sqrt(mean_sq + 1e-5));
    }
  }
  expect_close(out, ref, kAtol, kRtol, "rmsnorm");
}

TEST(CpuOps, SwigluMatchesReference) {
  const int64_t n = 101;
  std::vector<float> gate = random_vec(n, 3, 4.0f), up = random_vec(n, 4);
  std::vector<float> out(n);
  swiglu(out.data(), gate.data(), up.data(), n);
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; i++) {
    const double sigmoid = 0.5 * (1.0 + std::tanh(0.5 * gate[i]));
    ref[i] = gate[i] * sigmoid * up[i];
  }
  expect_close(out, ref, kAtol, kRtol, "swiglu");
}

TEST(CpuOps, SoftmaxMatchesReferenceAndIsStable) {
  std::vector<float> x = random_vec(50, 5, 5.0f);
  x[7] = 1000.0f;  // would overflow exp() without subtracting the max
  x[8] = 1001.0f;
  std::vector<double> ref(x.size());
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); i++) sum += std::exp(static_cast<double>(x[i]) - 1001.0);
  for (size_t i = 0; i < x.size(); i++) ref[i] = std::exp(static_cast<double>(x[i]) - 1001.0) / sum;
  softmax(x.data(), x.size());
  expect_close(x, ref, 1e-7, kRtol, "softmax");
  EXPECT_NEAR(ref[8] / ref[7], std::exp(1.0), 1e-9);
}

// Reference RoPE: each pair as a complex number multiplied by e^{i pos inv_freq}, with the
// frequencies computed from theta independently of rope_inv_freq.
std::vector<double> rope_reference(const std::vector<float>& x, int64_t n_tokens, int64_t n_heads,
                                   int64_t head_dim, int64_t pos0, double theta, bool interleaved) {
  std::vector<double> out(x.begin(), x.end());
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < n_tokens; t++) {
    for (int64_t h = 0; h < n_heads; h++) {
      for (int64_t i = 0; i < half; i++) {
        const double freq = std::exp(-(2.0 * i / head_dim) * std::log(theta));
        const int64_t ia = interleaved ? 2 * i : i;
        const int64_t ib = interleaved ? 2 * i + 1 : i + half;
        const int64_t base = (t * n_heads + h) * head_dim;
        std::complex<double> z(x[base + ia], x[base + ib]);
        z *= std::polar(1.0, static_cast<double>(pos0 + t) * freq);
        out[base + ia] = z.real();
        out[base + ib] = z.imag();
      }
    }
  }
  return out;
}

TEST(CpuRope, BothPairingsMatchComplexRotation) {
  const int64_t n_tokens = 4, n_heads = 3, head_dim = 16, pos0 = 1000;
  const float theta = 10000.0f;
  std::vector<float> inv_freq(head_dim / 2);
  rope_inv_freq(inv_freq.data(), head_dim, theta);
  for (bool interleaved : {false, true}) {
    std::vector<float> x = random_vec(n_tokens * n_heads * head_dim, 6);
    std::vector<double> ref =
        rope_reference(x, n_tokens, n_heads, head_dim, pos0, theta, interleaved);
    rope_apply(x.data(), n_tokens, n_heads, head_dim, pos0, inv_freq.data(), interleaved);
    // pos * inv_freq reaches ~1e3 rad; a float inv_freq carries relative error 6e-8, so the
    // angle is off by up to ~6e-5 rad: atol 2e-4.
    expect_close(x, ref, 2e-4, 1e-5, interleaved ? "rope interleaved" : "rope half");
  }
}

TEST(CpuRope, PositionZeroIsIdentity) {
  std::vector<float> inv_freq(4);
  rope_inv_freq(inv_freq.data(), 8, 500000.0f);
  std::vector<float> x = random_vec(16, 7);
  std::vector<float> y = x;
  rope_apply(y.data(), 1, 2, 8, 0, inv_freq.data(), false);
  EXPECT_EQ(x, y);
}

TEST(CpuRope, Llama3ScalingRegimes) {
  // Llama 3.2's parameters: head_dim 64, theta 500000, factor 32, low 1, high 4, orig 8192.
  const int64_t head_dim = 64, half = head_dim / 2;
  std::vector<float> inv_freq(half), scaled(half);
  rope_inv_freq(inv_freq.data(), head_dim, 500000.0f);
  scaled = inv_freq;
  rope_scale_llama3(scaled.data(), half, 32.0f, 1.0f, 4.0f, 8192);
  int n_kept = 0, n_divided = 0, n_smooth = 0;
  for (int64_t i = 0; i < half; i++) {
    const double wavelen = 2.0 * M_PI / inv_freq[i];
    if (wavelen < 8192.0 / 4.0) {
      EXPECT_FLOAT_EQ(scaled[i], inv_freq[i]) << i;
      n_kept++;
    } else if (wavelen > 8192.0 / 1.0) {
      EXPECT_FLOAT_EQ(scaled[i], inv_freq[i] / 32.0f) << i;
      n_divided++;
    } else {
      // The interpolation written as a lerp from inv_freq/factor toward inv_freq.
      const double t = (8192.0 / wavelen - 1.0) / 3.0;
      const double lo = inv_freq[i] / 32.0;
      EXPECT_NEAR(scaled[i], lo + t * (inv_freq[i] - lo), 1e-6 * inv_freq[i]) << i;
      EXPECT_LT(scaled[i], inv_freq[i]);
      EXPECT_GT(scaled[i], inv_freq[i] / 32.0f);
      n_smooth++;
    }
  }
  // All three regimes occur for these parameters.
  EXPECT_GT(n_kept, 0);
  EXPECT_GT(n_divided, 0);
  EXPECT_GT(n_smooth, 0);
}

// Reference attention: the full [n_tokens, n_ctx] score matrix per head with -inf above the
// causal diagonal, in double.
std::vector<double> attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, int64_t n_tokens,
                                        int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                                        int64_t head_dim) {
  const int64_t n_ctx = n_past + n_tokens;
  std::vector<double> out(n_tokens * n_heads * head_dim, 0.0);
  for (int64_t h = 0; h < n_heads; h++) {
    const int64_t kv_h = h * n_kv_heads / n_heads;
    for (int64_t t = 0; t < n_tokens; t++) {
      std::vector<double> s(n_ctx);
      double max_s = -INFINITY;
      for (int64_t p = 0; p < n_ctx; p++) {
        if (p > n_past + t) {
          s[p] = -INFINITY;
          continue;
        }
        double dot = 0.0;
        for (int64_t d = 0; d < head_dim; d++) {
          dot += static_cast<double>(q[(t * n_heads + h) * head_dim + d]) *
                 k[(p * n_kv_heads + kv_h) * head_dim + d];
        }
        s[p] = dot / std::sqrt(static_cast<double>(head_dim));
        max_s = std::max(max_s, s[p]);
      }
      double z = 0.0;
      for (int64_t p = 0; p < n_ctx; p++) z += std::exp(s[p] - max_s);
      for (int64_t p = 0; p < n_ctx; p++) {
        const double a = std::exp(s[p] - max_s) / z;
        for (int64_t d = 0; d < head_dim; d++) {
          out[(t * n_heads + h) * head_dim + d] += a * v[(p * n_kv_heads + kv_h) * head_dim + d];
        }
      }
    }
  }
  return out;
}

TEST(CpuAttention, CausalGqaMatchesReference) {
  struct Case {
    int64_t n_tokens, n_past, n_heads, n_kv_heads, head_dim;
  };
  const Case cases[] = {{1, 0, 4, 4, 16}, {3, 5, 4, 2, 16}, {8, 13, 6, 2, 20}, {1, 40, 8, 1, 32}};
  for (const Case& c : cases) {
    const int64_t n_ctx = c.n_past + c.n_tokens;
    const int64_t capacity = n_ctx + 7;  // cache rows beyond n_ctx hold NaN: never read
    std::vector<float> q = random_vec(c.n_tokens * c.n_heads * c.head_dim, 8, 2.0f);
    std::vector<float> k = random_vec(capacity * c.n_kv_heads * c.head_dim, 9);
    std::vector<float> v = random_vec(capacity * c.n_kv_heads * c.head_dim, 10);
    for (int64_t i = n_ctx * c.n_kv_heads * c.head_dim; i < static_cast<int64_t>(k.size()); i++) {
      k[i] = NAN;
      v[i] = NAN;
    }
    std::vector<double> ref =
        attention_reference(q, k, v, c.n_tokens, c.n_past, c.n_heads, c.n_kv_heads, c.head_dim);
    for (bool plain : {true, false}) {  // the plain code and (where the CPU has it) AVX-512
      attention_force_plain(plain);
      std::vector<float> out(q.size());
      attention(out.data(), q.data(), k.data(), v.data(), c.n_tokens, c.n_past, c.n_heads,
                c.n_kv_heads, c.head_dim);
      expect_close(out, ref, 1e-5, 1e-4,
                   std::string(plain ? "plain" : "default") + " attention n_tokens=" +
                       std::to_string(c.n_tokens) + " n_past=" + std::to_string(c.n_past));
    }
    attention_force_plain(false);
  }
}

// The AVX-512 attention against the plain code, bit for bit: head sizes with a dot tail
// (n % 8) and a partial last register of V columns (n % 16), more than 64 columns (two passes),
// linear and tree attention, NaN in the cache rows beyond the context (never read). Linear
// attention runs a KV group's query heads together (up to 4 per call): groups of 1, 2, 3, 4,
// 6 (two calls of 3) and 8 (two of 4), contexts that leave 0 to 7 positions after the blocks
// of eight.
TEST(CpuAttention, Avx512EqualsPlainBitForBit) {
  struct Case {
    int64_t n_tokens, n_past, n_heads, n_kv_heads, head_dim;
  };
  const Case cases[] = {{1, 0, 4, 4, 64},    {1, 150, 9, 3, 64}, {5, 31, 8, 2, 128},
                        {3, 17, 6, 2, 20},   {2, 9, 4, 1, 12},   {4, 70, 4, 2, 80},
                        {1, 200, 2, 2, 136}, {2, 40, 16, 2, 64}, {1, 33, 12, 2, 32}};
  for (const Case& c : cases) {
    const int64_t n_ctx = c.n_past + c.n_tokens;
    const int64_t capacity = n_ctx + 3;
    std::vector<float> q = random_vec(c.n_tokens * c.n_heads * c.head_dim, 18, 2.0f);
    std::vector<float> k = random_vec(capacity * c.n_kv_heads * c.head_dim, 19);
    std::vector<float> v = random_vec(capacity * c.n_kv_heads * c.head_dim, 20);
    for (int64_t i = n_ctx * c.n_kv_heads * c.head_dim; i < static_cast<int64_t>(k.size()); i++) {
      k[i] = NAN;
      v[i] = NAN;
    }
    // Tree form of the same queries: token t reads [0, n_past) then the new slots up to itself.
    std::vector<int64_t> prefix(c.n_tokens, c.n_past), offset(c.n_tokens + 1, 0), slots;
    for (int64_t t = 0; t < c.n_tokens; t++) {
      for (int64_t j = 0; j <= t; j++) slots.push_back(c.n_past + j);
      offset[t + 1] = static_cast<int64_t>(slots.size());
    }
    std::vector<float> out[2][2];  // [plain][tree]
    for (int plain = 0; plain < 2; plain++) {
      attention_force_plain(plain == 1);
      for (int tree = 0; tree < 2; tree++) {
        out[plain][tree].assign(q.size(), 0.0f);
        if (tree) {
          attention_tree(out[plain][tree].data(), q.data(), k.data(), v.data(), c.n_tokens,
                         prefix.data(), offset.data(), slots.data(), c.n_heads, c.n_kv_heads,
                         c.head_dim);
        } else {
          attention(out[plain][tree].data(), q.data(), k.data(), v.data(), c.n_tokens, c.n_past,
                    c.n_heads, c.n_kv_heads, c.head_dim);
        }
      }
    }
    attention_force_plain(false);
    const std::string what = "head_dim " + std::to_string(c.head_dim) + " n_past " +
                             std::to_string(c.n_past) + " n_tokens " + std::to_string(c.n_tokens);
    for (int plain = 0; plain < 2; plain++) {
      for (int tree = 0; tree < 2; tree++) {
        EXPECT_EQ(0, std::memcmp(out[plain][tree].data(), out[1][0].data(), q.size() * 4))
            << what << (plain ? " plain" : " default") << (tree ? " tree" : " linear");
      }
    }
  }
}

// The number of floats of a and b whose bits differ.
int64_t bit_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); i++) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// A SwiGLU call of at least kSplitElements runs over two threads (split_over_threads), in place
// as the runners call it, and gives the bits of the plain loop of the same operations. The
// comparison would catch a split that leaves the last block out or applies a block twice in
// place (both planted below, on one thread).
TEST(CpuOps, LargeSwigluSplitOverTwoThreadsGivesThePlainLoopsBits) {
  threads_set(2);
  ASSERT_TRUE(split_over_threads(kSplitElements));
  ASSERT_FALSE(split_over_threads(kSplitElements - 1));
  const int64_t n = 3 * kSplitElements + 37;  // a partial last block
  const std::vector<float> gate = random_vec(n, 11, 4.0f), up = random_vec(n, 12);
  std::vector<float> plain(n);
  for (int64_t i = 0; i < n; i++) plain[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  std::vector<float> split = gate;
  swiglu(split.data(), split.data(), up.data(), n);
  EXPECT_EQ(bit_mismatches(split, plain), 0);
  threads_set(1);
  ASSERT_FALSE(split_over_threads(n));
  std::vector<float> short_of_one = gate, twice = gate;
  swiglu(short_of_one.data(), short_of_one.data(), up.data(), n - 1);
  swiglu(twice.data(), twice.data(), up.data(), n);
  swiglu(twice.data(), twice.data(), up.data(), 4096);
  EXPECT_GT(bit_mismatches(short_of_one, plain), 0);
  EXPECT_GT(bit_mismatches(twice, plain), 0);
  threads_set(0);
}

}  // namespace
}  // namespace speclab
