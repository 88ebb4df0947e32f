#include "core/dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace speclab {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::Q8_0:
      return "Q8_0";
    case DType::Q4_0:
      return "Q4_0";
    case DType::Q4_1:
      return "Q4_1";
    case DType::Q4_K:
      return "Q4_K";
    case DType::Q6_K:
      return "Q6_K";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType* out) {
  std::string up = name;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                  DType::Q4_K, DType::Q6_K}) {
    if (up == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool dtype_is_quantized(DType t) {
  return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q4_K ||
         t == DType::Q6_K;
}

int dtype_block_size(DType t) {
  if (t == DType::Q4_K || t == DType::Q6_K) return kSuperBlock;
  return dtype_is_quantized(t) ? kQuantBlock : 1;
}

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 2;
    case DType::Q8_0:
      return sizeof(BlockQ8_0);
    case DType::Q4_0:
      return sizeof(BlockQ4_0);
    case DType::Q4_1:
      return sizeof(BlockQ4_1);
    case DType::Q4_K:
      return sizeof(BlockQ4_K);
    case DType::Q6_K:
      return sizeof(BlockQ6_K);
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
  if (absx < 0x38800000u) {                       // below the smallest normal fp16: subnormal
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

namespace {

void q4_k_pack_scale_min(uint8_t* scales, int j, int sc, int m) {
  if (j < 4) {
    scales[j] = static_cast<uint8_t>((scales[j] & 0xc0) | sc);
    scales[j + 4] = static_cast<uint8_t>((scales[j + 4] & 0xc0) | m);
  } else {
    scales[j + 4] = static_cast<uint8_t>((sc & 0x0f) | ((m & 0x0f) << 4));
    scales[j - 4] = static_cast<uint8_t>((scales[j - 4] & 0x3f) | ((sc >> 4) << 6));
    scales[j] = static_cast<uint8_t>((scales[j] & 0x3f) | ((m >> 4) << 6));
  }
}

int clamp_round(float v, int lo, int hi) {
  return std::min(hi, std::max(lo, static_cast<int>(std::lround(v))));
}

void q4_k_to_f32(const BlockQ4_K& b, float* y) {
  const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
  for (int j = 0; j < 8; j++) {
    int sc, m;
    dtype_q4_k_scale_min(b.scales, j, &sc, &m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    const uint8_t* q = b.qs + 32 * (j / 2);
    for (int l = 0; l < 32; l++) {
      const int nib = j % 2 == 0 ? (q[l] & 0x0f) : (q[l] >> 4);
      const float scaled = d1 * static_cast<float>(nib);  // (a product, then a difference)
      y[32 * j + l] = scaled - m1;
    }
  }
}

void q6_k_to_f32(const BlockQ6_K& b, float* y) {
  const float d = fp16_to_f32(b.d);
  for (int e = 0; e < kSuperBlock; e++) {
    y[e] =
        (d * static_cast<float>(b.scales[e / 16])) * static_cast<float>(dtype_q6_k_code(b, e) - 32);
  }
}

// Sub-block scales from each sub-block's range; d and dmin scale the 6-bit codes.
void q4_k_from_f32(const float* x, BlockQ4_K* b) {
  float scale[8], offset[8];  // x ~ scale * q - offset, q in 0..15, offset >= 0
  float max_scale = 0, max_offset = 0;
  for (int j = 0; j < 8; j++) {
    float mn = 0, mx = 0;  // the range always includes 0: offsets are non-negative
    for (int l = 0; l < 32; l++) {
      mn = std::min(mn, x[32 * j + l]);
      mx = std::max(mx, x[32 * j + l]);
    }
    scale[j] = (mx - mn) / 15.0f;
    offset[j] = -mn;
    max_scale = std::max(max_scale, scale[j]);
    max_offset = std::max(max_offset, offset[j]);
  }
  const float d = max_scale / 63.0f, dmin = max_offset / 63.0f;
  std::memset(b, 0, sizeof(*b));
  b->d = f32_to_fp16(d);
  b->dmin = f32_to_fp16(dmin);
  const float dq = fp16_to_f32(b->d), dminq = fp16_to_f32(b->dmin);
  for (int j = 0; j < 8; j++) {
    const int sc = dq > 0 ? clamp_round(scale[j] / dq, 0, 63) : 0;
    const int m = dminq > 0 ? clamp_round(offset[j] / dminq, 0, 63) : 0;
    q4_k_pack_scale_min(b->scales, j, sc, m);
    const float d1 = dq * static_cast<float>(sc), m1 = dminq * static_cast<float>(m);
    for (int l = 0; l < 32; l++) {
      const int q = d1 > 0 ? clamp_round((x[32 * j + l] + m1) / d1, 0, 15) : 0;
      b->qs[32 * (j / 2) + l] |= static_cast<uint8_t>(j % 2 == 0 ? q : q << 4);
    }
  }
}

void q6_k_from_f32(const float* x, BlockQ6_K* b) {
  float scale[16];  // x ~ scale * (q - 32), q - 32 in -32..31
  float max_abs_scale = 0;
  for (int s = 0; s < 16; s++) {
    float amax = 0, maxv = 0;  // the signed value of largest magnitude maps to -32
    for (int l = 0; l < 16; l++) {
      if (std::fabs(x[16 * s + l]) > amax) {
        amax = std::fabs(x[16 * s + l]);
        maxv = x[16 * s + l];
      }
    }
    scale[s] = maxv / -32.0f;
    max_abs_scale = std::max(max_abs_scale, std::fabs(scale[s]));
  }
  const float d = max_abs_scale / 127.0f;
  std::memset(b, 0, sizeof(*b));
  b->d = f32_to_fp16(d);
  const float dq = fp16_to_f32(b->d);
  for (int s = 0; s < 16; s++) {
    const int sc = dq > 0 ? clamp_round(scale[s] / dq, -127, 127) : 0;
    b->scales[s] = static_cast<int8_t>(sc);
    const float ds = dq * static_cast<float>(sc);
    for (int l = 0; l < 16; l++) {
      const int e = 16 * s + l;
      const int q = (ds != 0 ? clamp_round(x[e] / ds, -32, 31) : 0) + 32;
      const int n = e / 128, g = (e % 128) / 32, ll = e % 32;
      b->ql[64 * n + 32 * (g % 2) + ll] |=
          static_cast<uint8_t>(g < 2 ? (q & 0x0f) : (q & 0x0f) << 4);
      b->qh[32 * n + ll] |= static_cast<uint8_t>((q >> 4) << (2 * g));
    }
  }
}

}  // namespace

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
    case DType::Q4_K: {
      const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
      for (int64_t i = 0; i < n / kSuperBlock; i++) q4_k_to_f32(b[i], dst + i * kSuperBlock);
      return;
    }
    case DType::Q6_K: {
      const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
      for (int64_t i = 0; i < n / kSuperBlock; i++) q6_k_to_f32(b[i], dst + i * kSuperBlock);
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
    case DType::Q4_K: {
      BlockQ4_K* b = static_cast<BlockQ4_K*>(dst);
      for (int64_t i = 0; i < n / kSuperBlock; i++) q4_k_from_f32(src + i * kSuperBlock, &b[i]);
      return;
    }
    case DType::Q6_K: {
      BlockQ6_K* b = static_cast<BlockQ6_K*>(dst);
      for (int64_t i = 0; i < n / kSuperBlock; i++) q6_k_from_f32(src + i * kSuperBlock, &b[i]);
      return;
    }
  }
}

}  // namespace speclab
