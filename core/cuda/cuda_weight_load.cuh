// Device-side read of one weight value, dequantized to FP32: the twin of dtype_to_f32
// (core/dtype.h) for a single element. Quantized blocks follow GGML's layout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda/cuda_weights.h"

namespace speclab {

__device__ inline float cuda_half_bits_to_f32(uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

// Element j of row r of w. For quantized types the block is j / 32, the element j % 32.
__device__ inline float cuda_weight_at(const CudaWeightView& w, const uint8_t* row, int64_t j) {
  switch (w.dtype) {
    case DType::F32:
      return reinterpret_cast<const float*>(row)[j];
    case DType::F16:
      return cuda_half_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[j]);
    case DType::BF16:
      return __uint_as_float(static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[j])
                             << 16);
    case DType::Q8_0: {
      const uint8_t* blk = row + (j / 32) * 34;  // {fp16 d; int8 qs[32]}
      const float d = cuda_half_bits_to_f32(*reinterpret_cast<const uint16_t*>(blk));
      return d * static_cast<float>(static_cast<int8_t>(blk[2 + j % 32]));
    }
    case DType::Q4_0: {
      const uint8_t* blk = row + (j / 32) * 18;  // {fp16 d; uint8 qs[16]}
      const int e = j % 32;
      const float d = cuda_half_bits_to_f32(*reinterpret_cast<const uint16_t*>(blk));
      const int nib = e < 16 ? (blk[2 + e] & 0xF) : (blk[2 + e - 16] >> 4);
      return d * static_cast<float>(nib - 8);
    }
    case DType::Q4_1: {
      const uint8_t* blk = row + (j / 32) * 20;  // {fp16 d; fp16 m; uint8 qs[16]}
      const int e = j % 32;
      const float d = cuda_half_bits_to_f32(reinterpret_cast<const uint16_t*>(blk)[0]);
      const float m = cuda_half_bits_to_f32(reinterpret_cast<const uint16_t*>(blk)[1]);
      const int nib = e < 16 ? (blk[4 + e] & 0xF) : (blk[4 + e - 16] >> 4);
      return d * static_cast<float>(nib) + m;
    }
    case DType::Q4_K: {  // {fp16 d; fp16 dmin; uint8 scales[12]; uint8 qs[128]} per 256
      const uint8_t* blk = row + (j / 256) * 144;
      const int e = j % 256, sub = e / 32, l = e % 32;
      const uint8_t* sc = blk + 4;
      const int s = sub < 4 ? (sc[sub] & 63) : ((sc[sub + 4] & 0xF) | ((sc[sub - 4] >> 6) << 4));
      const int mn = sub < 4 ? (sc[sub + 4] & 63) : ((sc[sub + 4] >> 4) | ((sc[sub] >> 6) << 4));
      const uint8_t qb = blk[16 + 32 * (sub / 2) + l];
      const int nib = sub % 2 == 0 ? (qb & 0xF) : (qb >> 4);
      const float d = cuda_half_bits_to_f32(reinterpret_cast<const uint16_t*>(blk)[0]);
      const float dmin = cuda_half_bits_to_f32(reinterpret_cast<const uint16_t*>(blk)[1]);
      return d * static_cast<float>(s) * static_cast<float>(nib) - dmin * static_cast<float>(mn);
    }
    case DType::Q6_K: {  // {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d} per 256
      const uint8_t* blk = row + (j / 256) * 210;
      const int e = j % 256, n = e / 128, g = (e % 128) / 32, l = e % 32;
      const uint8_t lb = blk[64 * n + 32 * (g % 2) + l];
      const int lo = g < 2 ? (lb & 0xF) : (lb >> 4);
      const int hi = (blk[128 + 32 * n + l] >> (2 * g)) & 3;
      const float d = cuda_half_bits_to_f32(*reinterpret_cast<const uint16_t*>(blk + 208));
      const int8_t scale = static_cast<int8_t>(blk[192 + e / 16]);
      return d * static_cast<float>(scale) * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
  return 0.0f;
}

__device__ inline const uint8_t* cuda_weight_row(const CudaWeightView& w, int64_t r,
                                                 int64_t row_bytes) {
  return static_cast<const uint8_t*>(w.data) + r * row_bytes;
}

}  // namespace speclab
