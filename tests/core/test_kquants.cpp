// Q4_K and Q6_K super-blocks (GGML's K-quants, core/dtype.h): dtype_to_f32 against an
// element-by-element decoder written here from the block layout, hand-built blocks with known
// values, the quantizer's round trip, and matmul_weights on every kernel path against the
// plain reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/matmul_int8.h"
#include "core/threads.h"

namespace speclab {
namespace {

// --- An independent decoder: one value at a time, straight from the byte offsets. ---------

uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Q4_K, 144 bytes: d @0, dmin @2, scales[12] @4, qs[128] @16.
float q4_k_value(const uint8_t* block, int e) {
  const int sub = e / 32, l = e % 32;
  const uint8_t* s = block + 4;
  int sc, m;
  if (sub < 4) {
    sc = s[sub] & 0x3f;
    m = s[sub + 4] & 0x3f;
  } else {  // 4 low bits in s[sub + 4], 2 high bits in the top of s[sub - 4] / s[sub]
    sc = (s[sub + 4] & 0x0f) + 16 * (s[sub - 4] >> 6);
    m = (s[sub + 4] >> 4) + 16 * (s[sub] >> 6);
  }
  const uint8_t byte = block[16 + 32 * (sub / 2) + l];
  const int q = sub % 2 == 0 ? byte % 16 : byte / 16;
  const float d1 = fp16_to_f32(u16_at(block)) * static_cast<float>(sc);
  const float m1 = fp16_to_f32(u16_at(block + 2)) * static_cast<float>(m);
  const float scaled = d1 * static_cast<float>(q);
  return scaled - m1;
}

// Q6_K, 210 bytes: ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208.
float q6_k_value(const uint8_t* block, int e) {
  const int half = e / 128, group = (e % 128) / 32, l = e % 32;
  const uint8_t lo_byte = block[64 * half + 32 * (group % 2) + l];
  const int lo = group < 2 ? lo_byte % 16 : lo_byte / 16;
  const int hi = (block[128 + 32 * half + l] >> (2 * group)) % 4;
  const int scale = static_cast<int8_t>(block[192 + e / 16]);
  const float d = fp16_to_f32(u16_at(block + 208));
  return (d * static_cast<float>(scale)) * static_cast<float>(lo + 16 * hi - 32);
}

// Random block bytes with finite scales (fp16 d, dmin in [-2, 2]).
std::vector<uint8_t> random_blocks(DType dtype, int n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n_blocks * dtype_block_bytes(dtype));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int i = 0; i < n_blocks; i++) {
    uint8_t* p = bytes.data() + i * dtype_block_bytes(dtype);
    const uint16_t a = f32_to_fp16(u(rng)), b = f32_to_fp16(u(rng));
    if (dtype == DType::Q4_K) {
      std::memcpy(p, &a, 2);
      std::memcpy(p + 2, &b, 2);
    } else {
      std::memcpy(p + 208, &a, 2);
    }
  }
  return bytes;
}

TEST(KQuants, LayoutConstants) {
  EXPECT_EQ(dtype_block_size(DType::Q4_K), 256);
  EXPECT_EQ(dtype_block_size(DType::Q6_K), 256);
  EXPECT_EQ(dtype_block_bytes(DType::Q4_K), 144u);
  EXPECT_EQ(dtype_block_bytes(DType::Q6_K), 210u);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(dtype_row_bytes(DType::Q6_K, 768), 630u);
  EXPECT_TRUE(dtype_is_quantized(DType::Q4_K));
  DType t;
  ASSERT_TRUE(dtype_from_name("q4_k", &t));
  EXPECT_EQ(t, DType::Q4_K);
  ASSERT_TRUE(dtype_from_name("Q6_K", &t));
  EXPECT_EQ(t, DType::Q6_K);
  EXPECT_STREQ(dtype_name(DType::Q6_K), "Q6_K");
}

TEST(KQuants, DequantizationEqualsTheIndependentDecoder) {
  for (DType dtype : {DType::Q4_K, DType::Q6_K}) {
    const int n_blocks = 37;
    const std::vector<uint8_t> bytes = random_blocks(dtype, n_blocks, 5);
    std::vector<float> got(n_blocks * 256);
    dtype_to_f32(dtype, bytes.data(), got.data(), n_blocks * 256);
    for (int i = 0; i < n_blocks; i++) {
      const uint8_t* block = bytes.data() + i * dtype_block_bytes(dtype);
      for (int e = 0; e < 256; e++) {
        const float want = dtype == DType::Q4_K ? q4_k_value(block, e) : q6_k_value(block, e);
        ASSERT_EQ(got[i * 256 + e], want) << dtype_name(dtype) << " block " << i << " value " << e;
      }
    }
  }
}

// A Q4_K block built by hand: d = 0.5, dmin = 0.25; sub-block scales/mins
//   sc = {1, 2, 3, 63, 17, 33, 50, 0}, m = {0, 5, 63, 1, 16, 31, 32, 47}
// (the last four need the high bits); qs[k] = k % 16 | (15 - k % 16) << 4.
TEST(KQuants, HandBuiltQ4_KBlock) {
  alignas(4) uint8_t b[144] = {0};
  const uint16_t d = f32_to_fp16(0.5f), dmin = f32_to_fp16(0.25f);
  std::memcpy(b, &d, 2);
  std::memcpy(b + 2, &dmin, 2);
  const int sc[8] = {1, 2, 3, 63, 17, 33, 50, 0}, m[8] = {0, 5, 63, 1, 16, 31, 32, 47};
  uint8_t* s = b + 4;
  for (int j = 0; j < 4; j++) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  for (int k = 0; k < 128; k++) b[16 + k] = static_cast<uint8_t>(k % 16 | (15 - k % 16) << 4);
  std::vector<float> y(256);
  dtype_to_f32(DType::Q4_K, b, y.data(), 256);
  // value e: sub j = e / 32, l = e % 32, q = (j even: l % 16, odd: 15 - l % 16)
  EXPECT_EQ(y[0], 0.0f);                          // 0.5*1*0 - 0
  EXPECT_EQ(y[3], 1.5f);                          // 0.5*1*3 - 0.25*0
  EXPECT_EQ(y[32 + 1], 0.5f * 2 * 14 - 1.25f);    // sub 1: high nibble 15 - 1
  EXPECT_EQ(y[64 + 15], 0.5f * 3 * 15 - 15.75f);  // sub 2: min 63
  EXPECT_EQ(y[96 + 16], 0.5f * 63 * 15 - 0.25f);  // sub 3: l = 16 -> q = 15 - 0
  EXPECT_EQ(y[128 + 2], 0.5f * 17 * 2 - 4.0f);    // sub 4: sc 17 = 16 + 1, m 16
  EXPECT_EQ(y[160 + 5], 0.5f * 33 * 10 - 7.75f);  // sub 5: sc 33, m 31
  EXPECT_EQ(y[192 + 7], 0.5f * 50 * 7 - 8.0f);    // sub 6: sc 50, m 32
  EXPECT_EQ(y[224 + 9], 0.0f * 6 - 11.75f);       // sub 7: sc 0, m 47
  for (int e = 0; e < 256; e++) ASSERT_EQ(y[e], q4_k_value(b, e)) << e;
}

// A Q6_K block built by hand: d = 0.125; scales[s] = s - 8 (negative ones too); value e's
// 6-bit code is e % 64, so x = 0.125 * (e / 16 - 8) * (e % 64 - 32).
TEST(KQuants, HandBuiltQ6_KBlock) {
  alignas(4) uint8_t b[210] = {0};
  for (int e = 0; e < 256; e++) {
    const int q = e % 64, half = e / 128, group = (e % 128) / 32, l = e % 32;
    b[64 * half + 32 * (group % 2) + l] |= static_cast<uint8_t>((q & 15) << (group < 2 ? 0 : 4));
    b[128 + 32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * group));
  }
  for (int s = 0; s < 16; s++) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(s - 8));
  const uint16_t d = f32_to_fp16(0.125f);
  std::memcpy(b + 208, &d, 2);
  std::vector<float> y(256);
  dtype_to_f32(DType::Q6_K, b, y.data(), 256);
  for (int e = 0; e < 256; e++) {
    ASSERT_EQ(y[e], 0.125f * static_cast<float>(e / 16 - 8) * static_cast<float>(e % 64 - 32)) << e;
  }
  EXPECT_EQ(y[0], 0.125f * -8 * -32);  // 32
  EXPECT_EQ(y[255], 0.125f * 7 * 31);  // 27.125
}

// Quantize -> dequantize. Per sub-block (range R = max - min, including 0 for Q4_K) the
// quantizer picks a step R / 15 (Q4_K) or max|x| / 32 (Q6_K) and rounds it to a multiple of the
// super-block's fp16 scale d (and the Q4_K offset to a multiple of dmin), so every value is off
// by at most half a step plus what the scale rounding moves the extreme codes: step / 2 +
// 32 * d + dmin. Overall RMS error / RMS value: Q4_K <= 0.12, Q6_K <= 0.03.
TEST(KQuants, QuantizeRoundTrip) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = 256 * 64;
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  for (int i = 0; i < n; i += 97) x[i] *= 6.0f;  // outliers
  for (DType dtype : {DType::Q4_K, DType::Q6_K}) {
    std::vector<uint8_t> q(dtype_row_bytes(dtype, n));
    std::vector<float> y(n);
    dtype_from_f32(dtype, x.data(), q.data(), n);
    dtype_to_f32(dtype, q.data(), y.data(), n);
    const bool k4 = dtype == DType::Q4_K;
    const int sub = k4 ? 32 : 16;
    double se = 0, ss = 0;
    for (int s0 = 0; s0 < n; s0 += sub) {
      const uint8_t* block = q.data() + (s0 / 256) * dtype_block_bytes(dtype);
      const double d = fp16_to_f32(u16_at(k4 ? block : block + 208));
      const double dmin = k4 ? fp16_to_f32(u16_at(block + 2)) : 0.0;
      float mn = 0, mx = 0, amax = 0;
      for (int i = s0; i < s0 + sub; i++) {
        mn = std::min(mn, x[i]);
        mx = std::max(mx, x[i]);
        amax = std::max(amax, std::fabs(x[i]));
      }
      const double step = k4 ? (mx - mn) / 15.0 : amax / 32.0;
      for (int i = s0; i < s0 + sub; i++) {
        ASSERT_LE(std::fabs(y[i] - x[i]), step / 2 + 32 * d + dmin + 1e-6)
            << dtype_name(dtype) << " value " << i;
        se += (y[i] - x[i]) * (y[i] - x[i]);
        ss += x[i] * x[i];
      }
    }
    const double rel = std::sqrt(se / ss);
    std::printf("%s round trip: rms error / rms value = %.4f\n", dtype_name(dtype), rel);
    EXPECT_LE(rel, k4 ? 0.12 : 0.03) << dtype_name(dtype);
  }
}

// matmul_weights on every path against the plain reference (dequantize with dtype_to_f32,
// double sums; on the avx512vnni path, which dots k-quants with int8 activation blocks, the
// integer reference of core/matmul_int8.h): FP32 summation order only, 1e-4 + 1e-4 |ref|. Shapes:
// one and three super-blocks per row, partial tiles and work items; 1..9 tokens; 1 and 2 threads.
TEST(KQuants, MatmulOnEveryPathMatchesTheReference) {
  struct Shape {
    int64_t n_out, n_in;
  };
  const Shape shapes[] = {{5, 256}, {29, 768}, {64, 2048}};
  for (MatmulIsa isa : {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512,
                        MatmulIsa::kAvx512Bf16, MatmulIsa::kAvx512Vnni}) {
    if (!matmul_force_isa(isa)) continue;
    for (DType dtype : {DType::Q4_K, DType::Q6_K}) {
      for (const Shape& s : shapes) {
        std::mt19937 rng(s.n_out);
        std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(s.n_in)));
        std::vector<float> wf(s.n_out * s.n_in);
        for (float& v : wf) v = normal(rng);
        const size_t row_bytes = dtype_row_bytes(dtype, s.n_in);
        std::vector<uint8_t> bytes(row_bytes * s.n_out);
        for (int64_t r = 0; r < s.n_out; r++)
          dtype_from_f32(dtype, wf.data() + r * s.n_in, bytes.data() + r * row_bytes, s.n_in);
        TensorView w;
        w.name = "w";
        w.dtype = dtype;
        w.shape = {s.n_out, s.n_in};
        w.data = bytes.data();
        w.nbytes = bytes.size();
        for (int64_t k : {1, 3, 4, 9}) {
          std::vector<float> x(k * s.n_in);
          std::normal_distribution<float> nx(0.0f, 1.0f);
          for (float& v : x) v = nx(rng);
          std::vector<float> ref(k * s.n_out);
          if (matmul_quantizes_activations(dtype)) {
            matmul_weights_ref_int8(ref.data(), x.data(), w, k);
          } else {
            matmul_weights_ref(ref.data(), x.data(), w, k);
          }
          for (int threads : {1, 2}) {
            threads_set(threads);
            std::vector<float> got(k * s.n_out, NAN);
            matmul_weights(got.data(), x.data(), w, k);
            for (size_t i = 0; i < ref.size(); i++) {
              ASSERT_NEAR(got[i], ref[i], 1e-4 + 1e-4 * std::fabs(ref[i]))
                  << matmul_isa() << " " << dtype_name(dtype) << " " << s.n_out << "x" << s.n_in
                  << " k=" << k << " threads=" << threads << " out " << i;
            }
          }
        }
      }
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
  threads_set(0);
}

// One-hot activations read single weights back through the fused kernels: bit-identical to
// dtype_to_f32 (the in-register dequantization rounds as the reference does).
TEST(KQuants, FusedDequantizationIsExact) {
  for (MatmulIsa isa : {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512}) {
    if (!matmul_force_isa(isa)) continue;
    for (DType dtype : {DType::Q4_K, DType::Q6_K}) {
      const int64_t n_out = 7, n_in = 512;
      std::vector<uint8_t> bytes = random_blocks(dtype, n_out * 2, 23);
      TensorView w;
      w.dtype = dtype;
      w.shape = {n_out, n_in};
      w.data = bytes.data();
      w.nbytes = bytes.size();
      std::vector<float> row(n_in), x(n_in), out(n_out);
      for (int64_t i = 0; i < n_in; i += 13) {
        std::fill(x.begin(), x.end(), 0.0f);
        x[i] = 1.0f;
        matmul_weights(out.data(), x.data(), w, 1);
        for (int64_t r = 0; r < n_out; r++) {
          dtype_to_f32(dtype, w.row_ptr(r), row.data(), n_in);
          ASSERT_EQ(out[r], row[i])
              << matmul_isa() << " " << dtype_name(dtype) << " row " << r << " col " << i;
        }
      }
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
}

}  // namespace
}  // namespace speclab
