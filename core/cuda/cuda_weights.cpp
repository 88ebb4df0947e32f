#include "core/cuda/cuda_weights.h"

#include "core/error.h"

namespace speclab {

CudaWeight cuda_weight_upload(const TensorView& w) {
  SPECLAB_INPUT_CHECK(w.data != nullptr && !w.shape.empty(), "tensor '", w.name,
                      "': no data to upload to the device");
  CudaWeight out;
  out.dtype = w.dtype;
  out.rows = w.rows();
  out.cols = w.cols();
  const size_t n = static_cast<size_t>(out.rows) * dtype_row_bytes(w.dtype, out.cols);
  out.bytes.upload(static_cast<const uint8_t*>(w.data), n);
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(nullptr), "weight upload failed");
  return out;
}

}  // namespace speclab
