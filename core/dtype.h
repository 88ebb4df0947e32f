// Storage dtypes of weights and their conversion to FP32.
//
// Block-quantized formats follow GGML's layout (so GGUF tensors are used as stored):
//   Q8_0: 32 values per 34-byte block  {fp16 d; int8 qs[32]}            x = d * q
//   Q4_0: 32 values per 18-byte block  {fp16 d; uint8 qs[16]}           x = d * (nibble - 8)
//   Q4_1: 32 values per 20-byte block  {fp16 d; fp16 m; uint8 qs[16]}   x = d * nibble + m
// In Q4 blocks element j (j < 16) is the low nibble of qs[j], element j + 16 the high nibble.
//
// K-quants: 256 values per super-block, in sub-blocks with their own quantized scales.
//   Q4_K: 144 bytes {fp16 d; fp16 dmin; uint8 scales[12]; uint8 qs[128]}
//         8 sub-blocks of 32; sub-block j has a 6-bit scale sc_j and a 6-bit min m_j packed in
//         `scales` (j < 4: sc_j = scales[j] & 63, m_j = scales[j + 4] & 63; j >= 4: the low 4
//         bits in scales[j + 4] (sc_j low nibble, m_j high nibble), the high 2 bits in the top
//         bits of scales[j - 4] (sc_j) and scales[j] (m_j)).
//         Value e (sub-block j = e / 32, l = e % 32): q = qs[32 * (j / 2) + l], its low nibble
//         when j is even, high when odd; x = (d * sc_j) * q - (dmin * m_j).
//   Q6_K: 210 bytes {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d}
//         Value e: half n = e / 128, group g = (e % 128) / 32, l = e % 32; low 4 bits from
//         ql[64n + 32 * (g % 2) + l] (low nibble for g < 2, high for g >= 2), high 2 bits from
//         qh[32n + l] >> (2g); x = (d * scales[e / 16]) * (q - 32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace speclab {

enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K };

constexpr int kQuantBlock = 32;   // values per block for Q8_0 / Q4_0 / Q4_1
constexpr int kSuperBlock = 256;  // values per super-block for Q4_K / Q6_K

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
struct BlockQ4_K {
  uint16_t d;     // fp16 scale of the sub-block scales
  uint16_t dmin;  // fp16 scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kSuperBlock / 2];
};
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];  // low 4 bits
  uint8_t qh[kSuperBlock / 4];  // high 2 bits
  int8_t scales[kSuperBlock / 16];
  uint16_t d;  // fp16 scale of the sub-block scales
};
static_assert(sizeof(BlockQ8_0) == 34, "GGML layout");
static_assert(sizeof(BlockQ4_K) == 144, "GGML layout");
static_assert(sizeof(BlockQ6_K) == 210, "GGML layout");
static_assert(sizeof(BlockQ4_0) == 18, "GGML layout");
static_assert(sizeof(BlockQ4_1) == 20, "GGML layout");

const char* dtype_name(DType t);
// Parses "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K" (case-insensitive);
// false if unknown.
bool dtype_from_name(const std::string& name, DType* out);
bool dtype_is_quantized(DType t);
// Values per storage unit: 1 for float types, 32 for Q8_0 / Q4_0 / Q4_1, 256 for Q4_K / Q6_K.
int dtype_block_size(DType t);
// Bytes per storage unit: 4, 2, 2, 34, 18, 20, 144, 210.
size_t dtype_block_bytes(DType t);
// Bytes of a row of n values (n must be a multiple of the block size for quantized types).
size_t dtype_row_bytes(DType t, int64_t n);

// Q4_K sub-block j's (0..7) 6-bit scale and min from a super-block's 12 packed bytes (inline:
// the AVX-512 kernels call it once per 32 weights).
inline void dtype_q4_k_scale_min(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// Q6_K value e's (0..255) six-bit code q (0..63; the weight is (d * scales[e / 16]) * (q - 32)):
// value e = 128n + 32g + l has its low 4 bits in ql[64n + 32(g % 2) + l] (the low nibble for
// g < 2, the high one for g >= 2) and its high 2 bits in bits 2g, 2g + 1 of qh[32n + l].
inline int dtype_q6_k_code(const BlockQ6_K& b, int e) {
  const int n = e / 128, g = (e % 128) / 32, l = e % 32;
  const uint8_t lo_byte = b.ql[64 * n + 32 * (g % 2) + l];
  const int lo = g < 2 ? (lo_byte & 0x0f) : (lo_byte >> 4);
  const int hi = (b.qh[32 * n + l] >> (2 * g)) & 3;
  return lo | (hi << 4);
}

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
// multiple of the block size and src points at a block boundary. Plain reference code.
void dtype_to_f32(DType t, const void* src, float* dst, int64_t n);
// Quantizes n FP32 values into dtype t (reference; used for tests and synthetic weights).
// Q4_K / Q6_K: sub-block scales from each sub-block's range (no search for the best scale, as
// llama.cpp's quantizer does): the layout is GGML's, the rounding error somewhat larger.
void dtype_from_f32(DType t, const float* src, void* dst, int64_t n);

}  // namespace speclab
