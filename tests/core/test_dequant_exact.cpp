// The in-register dequantization of every matmul path against dtype_to_f32 (the plain
// reference), bit for bit, with block scales drawn from the whole finite FP16 range (subnormal,
// negative, up to 65504). The AVX-512 kernels compute the Q4_1 and Q4_K tables with one FMA
// where the reference multiplies, then adds (core/matmul_avx512.cpp): that is exact only because
// an FP16 scale (11 significant bits) times a 4-bit code (times a 6-bit sub-block scale for
// Q4_K) fits FP32's 24 bits, so any scale that broke the argument would show here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"

namespace speclab {
namespace {

// A random finite FP16 value (any sign, exponent and mantissa; no infinity or NaN).
uint16_t random_finite_fp16(std::mt19937& rng) {
  for (;;) {
    const uint16_t h = static_cast<uint16_t>(rng());
    if ((h & 0x7c00) != 0x7c00) return h;
  }
}

// n_blocks blocks of random bytes whose FP16 scale fields are random finite values.
std::vector<uint8_t> blocks_with_wild_scales(DType dtype, int64_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t bytes_per = dtype_block_bytes(dtype);
  std::vector<uint8_t> bytes(n_blocks * bytes_per);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < n_blocks; i++) {
    uint8_t* p = bytes.data() + i * bytes_per;
    // Byte offsets of the FP16 fields (core/dtype.h): Q8_0/Q4_0 d at 0; Q4_1 d, m at 0, 2;
    // Q4_K d, dmin at 0, 2; Q6_K d at 208.
    std::vector<size_t> fields;
    if (dtype == DType::Q8_0 || dtype == DType::Q4_0) fields = {0};
    if (dtype == DType::Q4_1 || dtype == DType::Q4_K) fields = {0, 2};
    if (dtype == DType::Q6_K) fields = {208};
    for (size_t off : fields) {
      // Every fourth block gets a scale from the extremes: subnormal or the largest exponents.
      uint16_t h = random_finite_fp16(rng);
      if (i % 4 == 1) h = static_cast<uint16_t>(h & 0x83ff);             // subnormal (or zero)
      if (i % 4 == 2) h = static_cast<uint16_t>((h & 0x83ff) | 0x7800);  // 2^15 .. 65504
      std::memcpy(p + off, &h, 2);
    }
  }
  return bytes;
}

TEST(DequantExact, InRegisterWeightsEqualTheReferenceOnEveryPath) {
  int checked = 0;
  for (MatmulIsa isa :
       {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512, MatmulIsa::kAvx512Bf16}) {
    if (!matmul_force_isa(isa)) continue;
    for (DType dtype : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K}) {
      const int64_t n_out = 13, n_in = 512;
      const int64_t blocks_per_row = n_in / dtype_block_size(dtype);
      std::vector<uint8_t> bytes =
          blocks_with_wild_scales(dtype, n_out * blocks_per_row, 31 + static_cast<int>(dtype));
      TensorView w;
      w.dtype = dtype;
      w.shape = {n_out, n_in};
      w.data = bytes.data();
      w.nbytes = bytes.size();
      std::vector<float> ref(n_out * n_in), x(n_in, 0.0f), out(n_out);
      for (int64_t r = 0; r < n_out; r++)
        dtype_to_f32(dtype, w.row_ptr(r), ref.data() + r * n_in, n_in);
      // One-hot activations read single weights back: fma(w, 0, acc) leaves acc as it is for
      // finite w, so out[r] is W[r][i] exactly (up to the sign of a zero, which the sums with
      // +0 cannot show: compared as values).
      for (int64_t i = 0; i < n_in; i++) {
        x[i] = 1.0f;
        matmul_weights(out.data(), x.data(), w, 1);
        x[i] = 0.0f;
        for (int64_t r = 0; r < n_out; r++) {
          ASSERT_EQ(out[r], ref[r * n_in + i])
              << matmul_isa() << " " << dtype_name(dtype) << " row " << r << " col " << i << ": "
              << out[r] << " vs reference " << ref[r * n_in + i];
        }
      }
      checked++;
    }
  }
  matmul_force_isa(MatmulIsa::kBest);
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace speclab
