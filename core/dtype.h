// Storage dtypes of weights and their conversion to FP32.
//
// Block-quantized formats follow GGML's layout (so GGUF tensors are used as stored):
//   Q8_0: 32 values per 34-byte block  {fp16 d; int8 qs[32]}            x = d * q
//   Q4_0: 32 values per 18-byte block  {fp16 d; uint8 qs[16]}           x = d * (nibble - 8)
//   Q4_1: 32 values per 20-byte block  {fp16 d; fp16 m; uint8 qs[16]}   x = d * nibble + m
// In Q4 blocks element j (j < 16) is the low nibble of qs[j], element j + 16 the high nibble.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace speclab {

enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1 };

constexpr int kQuantBlock = 32;  // values per block for Q8_0 / Q4_0 / Q4_1

struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[kQuantBlock];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQuantBlock / 2];
};
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ8_0) == 34, "GGML layout");
static_assert(sizeof(BlockQ4_0) == 18, "GGML layout");
static_assert(sizeof(BlockQ4_1) == 20, "GGML layout");

const char* dtype_name(DType t);
// Parses "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1" (case-insensitive); false if unknown.
bool dtype_from_name(const std::string& name, DType* out);
bool dtype_is_quantized(DType t);
// Values per storage unit: 1 for float types, 32 for block types.
int dtype_block_size(DType t);
// Bytes per storage unit: 4, 2, 2, 34, 18, 20.
size_t dtype_block_bytes(DType t);
// Bytes of a row of n values (n must be a multiple of the block size for quantized types).
size_t dtype_row_bytes(DType t, int64_t n);

// Scalar conversions (round-to-nearest-even on the way down).
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t f32_to_bf16(float f);

// Converts n values starting at src (in dtype t) to FP32. For block types n is a
// multiple of 32 and src points at a block boundary. Plain reference code.
void dtype_to_f32(DType t, const void* src, float* dst, int64_t n);
// Quantizes n FP32 values into dtype t (reference; used for tests and synthetic weights).
void dtype_from_f32(DType t, const float* src, void* dst, int64_t n);

}  // namespace speclab
