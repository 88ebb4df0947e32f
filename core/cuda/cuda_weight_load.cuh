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
  }
  return 0.0f;
}

__device__ inline const uint8_t* cuda_weight_row(const CudaWeightView& w, int64_t r,
                                                 int64_t row_bytes) {
  return static_cast<const uint8_t*>(w.data) + r * row_bytes;
}

}  // namespace speclab
