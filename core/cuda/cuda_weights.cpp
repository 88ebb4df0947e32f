#include "core/cuda/cuda_weights.h"

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/row_pairs.h"

namespace speclab {

CudaWeight cuda_weight_upload(const TensorView& w) {
  SPECLAB_INPUT_CHECK(w.data != nullptr && !w.shape.empty(), "tensor '", w.name,
                      "': no data to upload to the device");
  CudaWeight out;
  out.dtype = w.dtype;
  out.rows = w.rows();
  out.cols = w.cols();
  const size_t n = static_cast<size_t>(out.rows) * dtype_row_bytes(w.dtype, out.cols);
  if (w.layout == RowLayout::kRows) {
    out.bytes.upload(static_cast<const uint8_t*>(w.data), n);
  } else {
    // Row pairs (core/row_pairs.h, the CPU's one-token layout): the device kernels read plain
    // rows, so the matrix goes up unpaired (a host copy the matrix's size, freed on return).
    std::vector<uint8_t> rows(n);
    row_pairs_copy_rows(rows.data(), w, 0, out.rows);
    out.bytes.upload(rows.data(), n);
  }
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(nullptr), "weight upload failed");
  return out;
}

}  // namespace speclab
