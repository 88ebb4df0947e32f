#include "core/dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace speclab {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_0: return "Q4_0";
    case DType::Q4_1: return "Q4_1";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType* out) {
  std::string up = name;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1}) {
    if (up == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool dtype_is_quantized(DType t) { return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1; }

int dtype_block_size(DType t) { return dtype_is_quantized(t) ? kQuantBlock : 1; }

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::Q8_0: return sizeof(BlockQ8_0);
    case DType::Q4_0: return sizeof(BlockQ4_0);
    case DType::Q4_1: return sizeof(BlockQ4_1);
  }
  return 0;
}

size_t dtype_row_bytes(DType t, int64_t n) {
  return static_cast<size_t>(n / dtype_block_size(t)) * dtype_block_bytes(t);
}

float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        exp--;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00 : 0x7c00);  // nan / inf
  if (absx >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000u) {                        // below the smallest normal fp16: subnormal
    float af;
    std::memcpy(&af, &absx, 4);
    // Scale so the subnormal unit (2^-24) becomes 1 and round to nearest even.
    float scaled = af * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: re-bias exponent, round mantissa to nearest even.
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return sign | static_cast<uint16_t>(half);
}

uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

void dtype_to_f32(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::Q8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < kQuantBlock; j++) dst[i * kQuantBlock + j] = d * b[i].qs[j];
      }
      return;
    }
    case DType::Q4_0: {
      const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < kQuantBlock / 2; j++) {
          dst[i * kQuantBlock + j] = d * ((b[i].qs[j] & 0x0f) - 8);
          dst[i * kQuantBlock + j + 16] = d * ((b[i].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case DType::Q4_1: {
      const BlockQ4_1* b = static_cast<const BlockQ4_1*>(src);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float d = fp16_to_f32(b[i].d);
        const float m = fp16_to_f32(b[i].m);
        for (int j = 0; j < kQuantBlock / 2; j++) {
          dst[i * kQuantBlock + j] = d * (b[i].qs[j] & 0x0f) + m;
          dst[i * kQuantBlock + j + 16] = d * (b[i].qs[j] >> 4) + m;
        }
      }
      return;
    }
  }
}

void dtype_from_f32(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; i++) d[i] = f32_to_fp16(src[i]);
      return;
    }
    case DType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; i++) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::Q8_0: {
      BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float* x = src + i * kQuantBlock;
        float amax = 0;
        for (int j = 0; j < kQuantBlock; j++) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        for (int j = 0; j < kQuantBlock; j++)
          b[i].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
      }
      return;
    }
    case DType::Q4_0: {
      BlockQ4_0* b = static_cast<BlockQ4_0*>(dst);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float* x = src + i * kQuantBlock;
        float amax = 0, maxv = 0;  // signed value of largest magnitude, as GGML does
        for (int j = 0; j < kQuantBlock; j++) {
          if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            maxv = x[j];
          }
        }
        const float d = maxv / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        for (int j = 0; j < kQuantBlock / 2; j++) {
          int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
          int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
          b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      return;
    }
    case DType::Q4_1: {
      BlockQ4_1* b = static_cast<BlockQ4_1*>(dst);
      for (int64_t i = 0; i < n / kQuantBlock; i++) {
        const float* x = src + i * kQuantBlock;
        float mn = x[0], mx = x[0];
        for (int j = 1; j < kQuantBlock; j++) {
          mn = std::min(mn, x[j]);
          mx = std::max(mx, x[j]);
        }
        const float d = (mx - mn) / 15.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        b[i].m = f32_to_fp16(mn);
        for (int j = 0; j < kQuantBlock / 2; j++) {
          int lo = std::min(15, static_cast<int>((x[j] - mn) * id + 0.5f));
          int hi = std::min(15, static_cast<int>((x[j + 16] - mn) * id + 0.5f));
          b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      return;
    }
  }
}

}  // namespace speclab
