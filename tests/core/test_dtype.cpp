// dtype conversions against hand-computed values and round trips.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace speclab {
namespace {

TEST(DType, Fp16KnownValues) {
  EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(1e6f), 0x7c00);  // overflow -> inf
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
}

TEST(DType, Fp16RoundTripAllFiniteHalves) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf / nan
    EXPECT_EQ(f32_to_fp16(fp16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
}

TEST(DType, RowBytes) {
  EXPECT_EQ(dtype_row_bytes(DType::F32, 64), 256u);
  EXPECT_EQ(dtype_row_bytes(DType::BF16, 64), 128u);
  EXPECT_EQ(dtype_row_bytes(DType::Q8_0, 64), 68u);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_1, 64), 40u);
}

// Quantize-then-dequantize error is bounded by half a quantization step per block
// (a full step for Q4_0, whose 16 levels are asymmetric: -8..7, so the side opposite
// the largest magnitude is clamped at 7).
TEST(DType, QuantRoundTripWithinHalfStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(32 * 64), y(x.size());
  for (float& v : x) v = nd(rng);
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1}) {
    std::vector<uint8_t> buf(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
    dtype_from_f32(t, x.data(), buf.data(), static_cast<int64_t>(x.size()));
    dtype_to_f32(t, buf.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t b = 0; b < x.size() / 32; b++) {
      float mn = x[b * 32], mx = x[b * 32], amax = 0;
      for (int j = 0; j < 32; j++) {
        mn = std::min(mn, x[b * 32 + j]);
        mx = std::max(mx, x[b * 32 + j]);
        amax = std::max(amax, std::fabs(x[b * 32 + j]));
      }
      const float step = t == DType::Q8_0 ? amax / 127 : t == DType::Q4_0 ? amax / 8 : (mx - mn) / 15;
      for (int j = 0; j < 32; j++)
        ASSERT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), (t == DType::Q4_0 ? 1.0f : 0.5f) * step * 1.01f + 1e-3f)
            << dtype_name(t) << " block " << b << " elem " << j;
    }
  }
}

}  // namespace
}  // namespace speclab
