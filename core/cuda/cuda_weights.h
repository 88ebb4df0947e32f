// Weight matrices on the device, stored exactly as in the model file (any DType, GGML block
// layout for quantized types), so a model is uploaded once with plain copies.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_buffer.h"
#include "core/tensor_view.h"

namespace speclab {

// Non-owning view that kernels take by value: a [rows, cols] matrix; row r starts at
// data + r * dtype_row_bytes(dtype, cols).
struct CudaWeightView {
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;  // device pointer
};

// Owns the device copy of one TensorView viewed as [rows(), cols()].
struct CudaWeight {
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  CudaBuffer<uint8_t> bytes;  // [rows * dtype_row_bytes(dtype, cols)]

  CudaWeightView view() const { return CudaWeightView{dtype, rows, cols, bytes.data()}; }
};

// Copies w (host memory or an mmap) to the device; synchronous.
CudaWeight cuda_weight_upload(const TensorView& w);

}  // namespace speclab
