// The int8-activation products of Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K weights (core/matmul_int8.h):
// the specification on hand-built blocks, the AVX-512 VNNI kernels (core/matmul_vnni.cpp) against
// the plain integer reference, and both against the FP32-activation reference within the
// error bound that int8 activation blocks imply.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/matmul_int8.h"
#include "core/matmul_vnni.h"
#include "core/threads.h"

namespace speclab {
namespace {

struct OwnedWeights {
  std::vector<uint8_t> bytes;
  TensorView view;
};

OwnedWeights wrap(DType dtype, int64_t n_out, int64_t n_in, std::vector<uint8_t> bytes) {
  OwnedWeights w;
  w.bytes = std::move(bytes);
  w.view.name = "w";
  w.view.dtype = dtype;
  w.view.shape = {n_out, n_in};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

// A [n_out, n_in] matrix ~ N(0, 1/sqrt(n_in)) stored in dtype.
OwnedWeights random_weights(DType dtype, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(n_in)));
  std::vector<float> values(n_out * n_in);
  for (float& v : values) v = normal(rng);
  const size_t row_bytes = dtype_row_bytes(dtype, n_in);
  std::vector<uint8_t> bytes(row_bytes * n_out);
  for (int64_t r = 0; r < n_out; r++)
    dtype_from_f32(dtype, values.data() + r * n_in, bytes.data() + r * row_bytes, n_in);
  return wrap(dtype, n_out, n_in, std::move(bytes));
}

std::vector<float> random_activations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  // An outlier every 300 values, as real activations have (they set a block's dx).
  for (int64_t i = 0; i < n; i += 300) x[i] *= 20.0f;
  return x;
}

const DType kInt8Dtypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K};

// Forces the VNNI path for a test; skipped (and says so) where the CPU lacks it.
class Int8Vnni : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!matmul_force_isa(MatmulIsa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  }
  void TearDown() override {
    matmul_force_isa(MatmulIsa::kBest);
    threads_set(0);
  }
};

// ---------------------------------------------------------------------------------------
// The specification.

TEST(Int8ActivationBlocks, QuantizeHandValues) {
  // amax 127: dx = 1 and 1 / dx = 1, so q = nearest-even(x).
  float x[32];
  for (int j = 0; j < 32; j++) x[j] = static_cast<float>(j - 16);
  x[0] = -127.0f;
  x[1] = 2.5f;   // tie: to even 2
  x[2] = -3.5f;  // tie: to even -4
  x[3] = 0.49f;
  int8_t q[32];
  EXPECT_EQ(act_quantize_block(x, 32, q), 1.0f);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], 2);
  EXPECT_EQ(q[2], -4);
  EXPECT_EQ(q[3], 0);
  for (int j = 4; j < 32; j++) EXPECT_EQ(q[j], j - 16) << j;
  // A zero block: dx = 0, q = 0.
  float z[32] = {0};
  std::memset(q, 1, sizeof q);
  EXPECT_EQ(act_quantize_block(z, 32, q), 0.0f);
  for (int j = 0; j < 32; j++) EXPECT_EQ(q[j], 0);
  // Scale 2: amax 254 -> dx = 2, q = x / 2 rounded to even.
  for (int j = 0; j < 32; j++) x[j] = 254.0f - 2.0f * j;
  x[5] = 5.0f;  // 2.5 -> 2
  EXPECT_EQ(act_quantize_block(x, 32, q), 2.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[5], 2);
  EXPECT_EQ(q[31], 127 - 31);
}

// The k-quants' activation block is the 256-value super-block (llama.cpp's q8_K): one amax, one
// dx for all 256. A kernel or reference that quantized them per 32 would give the small blocks
// their own finer dx, and other q.
TEST(Int8ActivationBlocks, KQuantBlocksAre256Values) {
  EXPECT_EQ(act_block_values(DType::Q8_0), 32);
  EXPECT_EQ(act_block_values(DType::Q4_0), 32);
  EXPECT_EQ(act_block_values(DType::Q4_1), 32);
  EXPECT_EQ(act_block_values(DType::Q4_K), 256);
  EXPECT_EQ(act_block_values(DType::Q6_K), 256);
  float x[256];
  for (int j = 0; j < 256; j++) x[j] = static_cast<float>(j % 16) - 7.0f;  // |x| <= 8
  x[200] = -254.0f;  // amax 254 in the 7th 32-value block: dx = 2 for all 256
  x[3] = 3.0f;       // 1.5 -> 2 (to even)
  x[5] = 5.0f;       // 2.5 -> 2
  int8_t q[256];
  EXPECT_EQ(act_quantize_block(x, 256, q), 2.0f);
  EXPECT_EQ(q[200], -127);
  EXPECT_EQ(q[3], 2);
  EXPECT_EQ(q[5], 2);
  for (int j = 0; j < 256; j++) {
    if (j == 3 || j == 5 || j == 200) continue;
    EXPECT_EQ(q[j], static_cast<int8_t>(std::nearbyint(x[j] / 2.0f))) << j;
  }
  // The same values per 32: the first block's own dx is 8 / 127, its q span -111..127.
  EXPECT_EQ(act_quantize_block(x, 32, q), 8.0f / 127.0f);
  EXPECT_EQ(q[15], 127);
}

// Hand-built weight blocks against integer-valued activations that quantize exactly (amax 127,
// dx = 1), so the int8 result equals the FP32 one and a hand formula, on every path.
struct HandCase {
  DType dtype;
  std::vector<uint8_t> bytes;  // one row of two blocks
  std::vector<float> w;        // its 64 dequantized values
};

std::vector<HandCase> hand_cases() {
  std::vector<HandCase> cases;
  const uint16_t half = f32_to_fp16(0.5f), quarter = f32_to_fp16(0.25f);
  const uint16_t minus3 = f32_to_fp16(-3.0f), one = f32_to_fp16(1.0f);
  {  // Q8_0: block 0 d = 0.5, qs = j - 16 (and -128 at 31); block 1 d = 0.25, qs = 3 * (j % 7) - 9.
    HandCase c{DType::Q8_0, std::vector<uint8_t>(2 * 34), std::vector<float>(64)};
    std::memcpy(&c.bytes[0], &half, 2);
    std::memcpy(&c.bytes[34], &quarter, 2);
    for (int j = 0; j < 32; j++) {
      const int a = j == 31 ? -128 : j - 16, b = 3 * (j % 7) - 9;
      c.bytes[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(a));
      c.bytes[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(b));
      c.w[j] = 0.5f * a;
      c.w[32 + j] = 0.25f * b;
    }
    cases.push_back(c);
  }
  {  // Q4_0: d = 0.5 / 1.0; element j < 16 low nibble of qs[j] = j, element j + 16 high = 15 - j.
    HandCase c{DType::Q4_0, std::vector<uint8_t>(2 * 18), std::vector<float>(64)};
    std::memcpy(&c.bytes[0], &half, 2);
    std::memcpy(&c.bytes[18], &one, 2);
    for (int b = 0; b < 2; b++) {
      const float d = b == 0 ? 0.5f : 1.0f;
      for (int j = 0; j < 16; j++) {
        c.bytes[18 * b + 2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
        c.w[32 * b + j] = d * (j - 8);
        c.w[32 * b + j + 16] = d * (15 - j - 8);
      }
    }
    cases.push_back(c);
  }
  {  // Q4_1: d = 0.25, m = -3 / d = 0.5, m = 1; nibbles as Q4_0's.
    HandCase c{DType::Q4_1, std::vector<uint8_t>(2 * 20), std::vector<float>(64)};
    std::memcpy(&c.bytes[0], &quarter, 2);
    std::memcpy(&c.bytes[2], &minus3, 2);
    std::memcpy(&c.bytes[20], &half, 2);
    std::memcpy(&c.bytes[22], &one, 2);
    for (int b = 0; b < 2; b++) {
      const float d = b == 0 ? 0.25f : 0.5f, m = b == 0 ? -3.0f : 1.0f;
      for (int j = 0; j < 16; j++) {
        c.bytes[20 * b + 4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
        c.w[32 * b + j] = d * j + m;
        c.w[32 * b + j + 16] = d * (15 - j) + m;
      }
    }
    cases.push_back(c);
  }
  return cases;
}

TEST(Int8ActivationBlocks, HandBuiltBlocksOnEveryPath) {
  // Two tokens of integer activations with amax 127 in each block.
  std::vector<float> x(128);
  for (int j = 0; j < 64; j++) {
    x[j] = static_cast<float>((j * 37) % 255 - 127);
    x[64 + j] = static_cast<float>(((j * 11) % 31) - 15);
  }
  x[32] = 127.0f;
  x[64] = 127.0f;
  x[96] = -127.0f;
  for (const HandCase& c : hand_cases()) {
    // The same row three times (a partial tile), the dequantization checked first.
    std::vector<uint8_t> bytes;
    for (int r = 0; r < 3; r++) bytes.insert(bytes.end(), c.bytes.begin(), c.bytes.end());
    OwnedWeights w = wrap(c.dtype, 3, 64, bytes);
    std::vector<float> deq(64);
    dtype_to_f32(c.dtype, c.bytes.data(), deq.data(), 64);
    for (int j = 0; j < 64; j++) ASSERT_EQ(deq[j], c.w[j]) << dtype_name(c.dtype) << " " << j;
    double want[2] = {0, 0};
    for (int t = 0; t < 2; t++)
      for (int j = 0; j < 64; j++) want[t] += static_cast<double>(c.w[j]) * x[64 * t + j];
    std::vector<float> ref(6);
    matmul_weights_ref_int8(ref.data(), x.data(), w.view, 2);
    for (int i = 0; i < 6; i++) EXPECT_EQ(ref[i], want[i / 3]) << dtype_name(c.dtype) << " ref";
    for (MatmulIsa isa :
         {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512, MatmulIsa::kAvx512Vnni}) {
      if (!matmul_force_isa(isa)) continue;
      std::vector<float> got(6, NAN);
      matmul_weights(got.data(), x.data(), w.view, 2);
      for (int i = 0; i < 6; i++) {
        EXPECT_NEAR(got[i], want[i / 3], 1e-4 * (1 + std::fabs(want[i / 3])))
            << dtype_name(c.dtype) << " isa " << matmul_isa() << " out " << i;
      }
    }
    matmul_force_isa(MatmulIsa::kBest);
  }
}

// Hand-built k-quant super-blocks (one row of 256 values): Q4_K with 6-bit scales and minimums
// that use the packed top bits (sub-blocks 4..7), Q6_K with negative scales and every code;
// small power-of-two factors, so every dequantized value is exact and the int8 result against
// integer activations with amax 127 (dx = 1) equals the hand formula exactly in the reference
// and to FP32 summation on every path. A scale or minimum taken from the wrong sub-block, a
// nibble from the wrong half or a code bit from the wrong place moves an output by >= 0.25.
std::vector<HandCase> hand_kquant_cases() {
  std::vector<HandCase> cases;
  {
    HandCase c{DType::Q4_K, std::vector<uint8_t>(sizeof(BlockQ4_K)), std::vector<float>(256)};
    const int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63}, m[8] = {0, 5, 9, 13, 20, 40, 47, 61};
    const uint16_t d = f32_to_fp16(0.5f), dmin = f32_to_fp16(0.25f);
    std::memcpy(&c.bytes[0], &d, 2);
    std::memcpy(&c.bytes[2], &dmin, 2);
    uint8_t* s = &c.bytes[4];
    for (int j = 0; j < 4; j++) {
      s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
      s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
      s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    uint8_t* qs = &c.bytes[16];
    for (int k = 0; k < 128; k++)
      qs[k] = static_cast<uint8_t>((k * 7) % 16 | ((k * 5 + 3) % 16) << 4);
    for (int e = 0; e < 256; e++) {
      const int j = e / 32, l = e % 32;
      const uint8_t byte = qs[32 * (j / 2) + l];
      const int q = j % 2 == 0 ? byte & 15 : byte >> 4;
      c.w[e] = 0.5f * sc[j] * q - 0.25f * m[j];
    }
    cases.push_back(c);
  }
  {
    HandCase c{DType::Q6_K, std::vector<uint8_t>(sizeof(BlockQ6_K)), std::vector<float>(256)};
    uint8_t* b = c.bytes.data();
    for (int e = 0; e < 256; e++) {
      const int half = e / 128, group = (e % 128) / 32, l = e % 32, q = (e * 11 + 5) % 64;
      b[64 * half + 32 * (group % 2) + l] |= static_cast<uint8_t>((q & 15) << (group < 2 ? 0 : 4));
      b[128 + 32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * group));
      c.w[e] = 0.25f * static_cast<float>(e / 16 - 8) * static_cast<float>(q - 32);
    }
    for (int g = 0; g < 16; g++) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(g - 8));
    const uint16_t d = f32_to_fp16(0.25f);
    std::memcpy(&b[208], &d, 2);
    cases.push_back(c);
  }
  return cases;
}

TEST(Int8ActivationBlocks, HandBuiltKQuantSuperBlocksOnEveryPath) {
  // Two tokens of integer activations with amax 127 in each 32-value block (so in each
  // super-block, the k-quants' activation block).
  std::vector<float> x(512);
  for (int i = 0; i < 512; i++) x[i] = static_cast<float>((i * 37 + 11 * (i / 256)) % 255 - 127);
  for (int i = 0; i < 512; i += 32) x[i + (i / 32) % 32] = (i / 32) % 2 == 0 ? 127.0f : -127.0f;
  for (const HandCase& c : hand_kquant_cases()) {
    std::vector<uint8_t> bytes;
    for (int r = 0; r < 5; r++) bytes.insert(bytes.end(), c.bytes.begin(), c.bytes.end());
    OwnedWeights w = wrap(c.dtype, 5, 256, bytes);
    std::vector<float> deq(256);
    dtype_to_f32(c.dtype, c.bytes.data(), deq.data(), 256);
    for (int j = 0; j < 256; j++) ASSERT_EQ(deq[j], c.w[j]) << dtype_name(c.dtype) << " " << j;
    double want[2] = {0, 0};
    for (int t = 0; t < 2; t++)
      for (int j = 0; j < 256; j++) want[t] += static_cast<double>(c.w[j]) * x[256 * t + j];
    std::vector<float> ref(10);
    matmul_weights_ref_int8(ref.data(), x.data(), w.view, 2);
    for (int i = 0; i < 10; i++) EXPECT_EQ(ref[i], want[i / 5]) << dtype_name(c.dtype) << " ref";
    for (MatmulIsa isa :
         {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512, MatmulIsa::kAvx512Vnni}) {
      if (!matmul_force_isa(isa)) continue;
      std::vector<float> got(10, NAN);
      matmul_weights(got.data(), x.data(), w.view, 2);
      for (int i = 0; i < 10; i++) {
        EXPECT_NEAR(got[i], want[i / 5], 1e-4 * (1 + std::fabs(want[i / 5])))
            << dtype_name(c.dtype) << " isa " << matmul_isa() << " out " << i;
      }
    }
    matmul_force_isa(MatmulIsa::kBest);
  }
}

// ---------------------------------------------------------------------------------------
// The VNNI kernels.

// The packed activations quantize exactly as the specification, bit for bit (including ties
// and a lone last block), and carry the per-lane terms the kernels need (Q4_0's offsets, Q4_1's
// minimum terms; Q8_0 records are the values and dx, 128 bytes).
TEST_F(Int8Vnni, PackedActivationsEqualTheSpecification) {
  for (int64_t n_in : {32, 64, 96, 160}) {
    std::vector<float> x = random_activations(3 * n_in, 5);
    for (int64_t i = 0; i < 3 * n_in; i += 7) x[i] = std::nearbyint(x[i] * 4) / 4 + 0.5f;
    const int64_t n_steps = (n_in + 63) / 64;
    for (DType dtype : {DType::Q8_0, DType::Q4_0, DType::Q4_1}) {
      // Q8_0: the values and dx only (its kernel moves the weights' signs, no offset term).
      const int64_t bytes = matmul_vnni::record_bytes(dtype);
      ASSERT_EQ(bytes, dtype == DType::Q8_0 ? 128 : 192);
      std::vector<uint8_t> packed(3 * n_steps * bytes, 0xAB);
      matmul_vnni::pack(packed.data(), x.data(), 3, n_in, 16, 0, n_steps, dtype);
      for (int64_t t = 0; t < 3; t++) {
        for (int64_t s = 0; s < n_steps; s++) {
          const uint8_t* rec = packed.data() + (s * 3 + t) * bytes;
          for (int half = 0; half < 2; half++) {
            const int64_t i0 = s * 64 + 32 * half;
            int8_t q[32] = {0};
            float dx = 0.0f;
            if (i0 < n_in) dx = act_quantize_block(x.data() + t * n_in + i0, 32, q);
            int32_t qsum = 0;
            for (int j = 0; j < 32; j++) {
              ASSERT_EQ(static_cast<int8_t>(rec[32 * half + j]), q[j])
                  << "n_in " << n_in << " token " << t << " value " << i0 + j;
              qsum += q[j];
            }
            for (int l = 0; l < 8; l++) {
              float d;
              std::memcpy(&d, rec + 64 + 4 * (8 * half + l), 4);
              ASSERT_EQ(d, dx);
              if (dtype == DType::Q8_0) continue;
              const uint8_t* aux = rec + 128 + 4 * (8 * half + l);
              if (dtype == DType::Q4_1) {
                float a;
                std::memcpy(&a, aux, 4);
                ASSERT_EQ(a, dx * static_cast<float>(qsum) * 0.125f);
              } else {
                int32_t a;
                std::memcpy(&a, aux, 4);
                const int32_t lane = q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3];
                ASSERT_EQ(a, -8 * lane);
              }
            }
          }
        }
      }
    }
  }
}

// The k-quant records (one per 256-value super-block, the activation block): the 256 values
// quantized with one dx as the specification, bit for bit, placed in the dtype's block order;
// the 16 sums of 16 q in column order; dx; zeros to the end of the record.
TEST_F(Int8Vnni, SuperBlockRecordsEqualTheSpecification) {
  const int64_t n_in = 768, n_tokens = 3;  // 3 super-blocks
  std::vector<float> x = random_activations(n_tokens * n_in, 6);
  for (int64_t i = 0; i < n_tokens * n_in; i += 7) x[i] = std::nearbyint(x[i] * 4) / 4 + 0.5f;
  for (int64_t i = 512; i < 768; i++) x[i] = 0.0f;  // an all-zero super-block: dx = 0
  const int64_t bytes = matmul_vnni::kSuperRecordBytes;
  ASSERT_EQ(bytes, 320);
  for (DType dtype : {DType::Q4_K, DType::Q6_K}) {
    ASSERT_EQ(matmul_vnni::record_values(dtype), 256);
    ASSERT_EQ(matmul_vnni::record_bytes(dtype), bytes);
    std::vector<uint8_t> packed(n_tokens * 3 * bytes, 0xAB);
    matmul_vnni::pack(packed.data(), x.data(), n_tokens, n_in, 16, 0, 3, dtype);
    for (int64_t t = 0; t < n_tokens; t++) {
      for (int64_t sb = 0; sb < 3; sb++) {
        const uint8_t* rec = packed.data() + (sb * n_tokens + t) * bytes;
        int8_t q[256];
        const float dx = act_quantize_block(x.data() + t * n_in + 256 * sb, 256, q);
        const int order_q4k[8] = {0, 2, 1, 3, 4, 6, 5, 7};
        for (int p = 0; p < 8; p++) {
          const int j = dtype == DType::Q4_K ? order_q4k[p] : p;
          ASSERT_EQ(matmul_vnni::record_block(dtype, p), j);
          for (int l = 0; l < 32; l++) {
            ASSERT_EQ(static_cast<int8_t>(rec[32 * p + l]), q[32 * j + l])
                << dtype_name(dtype) << " token " << t << " super-block " << sb << " slot " << p;
          }
        }
        for (int e = 0; e < 16; e++) {
          int16_t sum;
          std::memcpy(&sum, rec + matmul_vnni::kSuperRecordSums + 2 * e, 2);
          int want = 0;
          for (int l = 0; l < 16; l++) want += q[16 * e + l];
          ASSERT_EQ(sum, want) << dtype_name(dtype) << " sum " << e;
        }
        float d;
        std::memcpy(&d, rec + matmul_vnni::kSuperRecordScale, 4);
        ASSERT_EQ(d, dx) << dtype_name(dtype) << " token " << t << " super-block " << sb;
        for (int64_t i = matmul_vnni::kSuperRecordScale + 4; i < bytes; i++) ASSERT_EQ(rec[i], 0);
      }
    }
  }
}

// FP32 summation order is all that separates the kernels from the double-precision integer
// reference: atol 1e-4 + 1e-4 |ref| (as for the FP32 paths) on O(1) outputs. Shapes: odd block
// counts (a lone last block), partial tiles and work items, 1..17 tokens (verification) and
// 70 tokens (a prompt: several chunks of packed activations shared by the threads); k-quants
// (whole super-blocks) on the shapes whose rows are, with 1, 3, 12 and 17 super-blocks (rows
// of several column segments).
TEST_F(Int8Vnni, MatchesIntegerReference) {
  struct Shape {
    int64_t n_out, n_in;
  };
  const Shape shapes[] = {{1, 32},    {5, 96},  {13, 64},  {37, 2080}, {203, 1024},
                          {29, 4128}, {7, 256}, {31, 768}, {9, 3072},  {6, 4352}};
  for (DType dtype : kInt8Dtypes) {
    for (const Shape& s : shapes) {
      if (s.n_in % dtype_block_size(dtype) != 0) continue;
      OwnedWeights w = random_weights(dtype, s.n_out, s.n_in, 7 + s.n_out);
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 16, 17, 70}) {
        if (n_tokens == 70 && s.n_out * s.n_in > 100000) continue;
        for (int threads : {1, 2}) {
          threads_set(threads);
          std::vector<float> x = random_activations(n_tokens * s.n_in, 11 + n_tokens);
          std::vector<float> got(n_tokens * s.n_out, NAN), ref(n_tokens * s.n_out, NAN);
          matmul_weights(got.data(), x.data(), w.view, n_tokens);
          matmul_weights_ref_int8(ref.data(), x.data(), w.view, n_tokens);
          int bad = 0;
          for (size_t i = 0; i < ref.size(); i++) {
            const float tol = 1e-4f + 1e-4f * std::fabs(ref[i]);
            if (!(std::fabs(got[i] - ref[i]) <= tol) && bad++ < 5) {
              ADD_FAILURE() << dtype_name(dtype) << " " << s.n_out << "x" << s.n_in
                            << " k=" << n_tokens << " threads=" << threads << " out[" << i
                            << "] = " << got[i] << ", ref " << ref[i];
            }
          }
          ASSERT_EQ(bad, 0);
        }
      }
    }
  }
}

// Against the FP32-activation reference (dequantized weights, double sums) the int8 path errs
// by at most sum_b (dx_b / 2) * sum_{j in b} |W_j| per output (core/matmul_int8.h), plus FP32
// summation slack 1e-4 (1 + |ref|). The typical error is far below the bound (a random walk);
// it is printed, and it must be nonzero (the activations really are quantized).
TEST_F(Int8Vnni, ActivationQuantizationErrorIsWithinItsBound) {
  for (DType dtype : kInt8Dtypes) {
    const int64_t n_out = 67, n_in = 3072, n_tokens = 5;
    OwnedWeights w = random_weights(dtype, n_out, n_in, 91);
    std::vector<float> x = random_activations(n_tokens * n_in, 92);
    std::vector<float> got(n_tokens * n_out), ref(n_tokens * n_out), bound(n_tokens * n_out);
    matmul_weights(got.data(), x.data(), w.view, n_tokens);
    matmul_weights_ref(ref.data(), x.data(), w.view, n_tokens);
    matmul_int8_error_bound(bound.data(), x.data(), w.view, n_tokens);
    double max_err = 0, max_ratio = 0, mean_bound = 0;
    for (size_t i = 0; i < ref.size(); i++) {
      const double err = std::fabs(got[i] - ref[i]);
      const double limit = bound[i] + 1e-4 * (1 + std::fabs(ref[i]));
      EXPECT_LE(err, limit) << dtype_name(dtype) << " out " << i;
      max_err = std::max(max_err, err);
      max_ratio = std::max(max_ratio, err / bound[i]);
      mean_bound += bound[i] / ref.size();
    }
    EXPECT_GT(max_err, 0.0) << dtype_name(dtype);
    std::printf(
        "%s [%lld x %lld] k=%lld: max |int8 - fp32| %.3g, mean bound %.3g, max err/bound %.3f\n",
        dtype_name(dtype), static_cast<long long>(n_out), static_cast<long long>(n_in),
        static_cast<long long>(n_tokens), max_err, mean_bound, max_ratio);
  }
}

// The VNNI path is opt-in (the default keeps FP32 activations), and from it the
// FP32-activation path is selectable for comparisons (matmul_force_float_activations).
TEST_F(Int8Vnni, DefaultAndForcedReferencePath) {
  matmul_force_isa(MatmulIsa::kBest);
  if (std::getenv("SPECLAB_MATMUL_ISA") == nullptr) {
    EXPECT_STREQ(matmul_isa(), "avx512");
    EXPECT_FALSE(matmul_quantizes_activations(DType::Q4_1));
  }
  matmul_force_isa(MatmulIsa::kAvx512Vnni);
  EXPECT_TRUE(matmul_quantizes_activations(DType::Q4_1));
  EXPECT_FALSE(matmul_quantizes_activations(DType::BF16));
  matmul_force_float_activations(true);
  EXPECT_STREQ(matmul_isa(), "avx512");
  EXPECT_FALSE(matmul_quantizes_activations(DType::Q4_1));
  // And then the products are the FP32-activation reference's (summation order aside).
  OwnedWeights w = random_weights(DType::Q4_1, 9, 256, 3);
  std::vector<float> x = random_activations(2 * 256, 4);
  std::vector<float> got(18), ref(18);
  matmul_weights(got.data(), x.data(), w.view, 2);
  matmul_weights_ref(ref.data(), x.data(), w.view, 2);
  for (int i = 0; i < 18; i++) EXPECT_NEAR(got[i], ref[i], 1e-4 * (1 + std::fabs(ref[i])));
  matmul_force_isa(MatmulIsa::kAvx512Vnni);
  EXPECT_STREQ(matmul_isa(), "avx512vnni");
}

}  // namespace
}  // namespace speclab
