#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/cuda_weight_load.cuh"

namespace speclab {
namespace {

// One block per token.   out: [n_tokens, dim]
__global__ void embedding_kernel(float* out, const int32_t* tokens, CudaWeightView w,
                                 int64_t row_bytes) {
  const int64_t t = blockIdx.x;
  const uint8_t* row = cuda_weight_row(w, tokens[t], row_bytes);
  for (int64_t j = threadIdx.x; j < w.cols; j += blockDim.x)
    out[t * w.cols + j] = cuda_weight_at(w, row, j);
}

// One block per row.   out, x: [n_rows, dim]   weight: [dim]
__global__ void rmsnorm_kernel(float* out, const float* x, const float* weight, int64_t dim,
                               float eps) {
  __shared__ double shared[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * dim;
  float* orow = out + static_cast<int64_t>(blockIdx.x) * dim;
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += static_cast<double>(xr[i]) * xr[i];
  ss = cuda_block_sum(ss, shared);
  const float scale = static_cast<float>(1.0 / sqrt(ss / dim + eps));
  __syncthreads();  // out may alias x: every thread has read x before anyone writes
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) orow[i] = xr[i] * scale * weight[i];
}

__global__ void swiglu_kernel(float* out, const float* gate, const float* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// One block per output row: out[i, :] = x[rows[i], :].
__global__ void rows_gather_kernel(float* out, const float* x, const int32_t* rows, int64_t dim) {
  const int64_t i = blockIdx.x;
  const float* src = x + static_cast<int64_t>(rows[i]) * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) out[i * dim + j] = src[j];
}

}  // namespace

void cuda_embedding_lookup(float* out, const int32_t* tokens, const CudaWeightView& w,
                           int64_t n_tokens, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_rowwise(n_tokens, w.cols);
  embedding_kernel<<<l.grid_x, l.block, 0, stream>>>(
      out, tokens, w, static_cast<int64_t>(dtype_row_bytes(w.dtype, w.cols)));
  SPECLAB_CUDA_CHECK_LAUNCH("embedding_kernel: bad launch configuration");
}

void cuda_rmsnorm(float* out, const float* x, const float* weight, int64_t n_tokens, int64_t dim,
                  float eps, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_rowwise(n_tokens, dim);
  rmsnorm_kernel<<<l.grid_x, l.block, 0, stream>>>(out, x, weight, dim, eps);
  SPECLAB_CUDA_CHECK_LAUNCH("rmsnorm_kernel: bad launch configuration");
}

void cuda_swiglu(float* out, const float* gate, const float* up, int64_t n, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_elementwise(n);
  swiglu_kernel<<<l.grid_x, l.block, 0, stream>>>(out, gate, up, n);
  SPECLAB_CUDA_CHECK_LAUNCH("swiglu_kernel: bad launch configuration");
}

void cuda_rows_gather(float* out, const float* x, const int32_t* rows, int64_t n, int64_t dim,
                      cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_rowwise(n, dim);
  rows_gather_kernel<<<l.grid_x, l.block, 0, stream>>>(out, x, rows, dim);
  SPECLAB_CUDA_CHECK_LAUNCH("rows_gather_kernel: bad launch configuration");
}

void cuda_add_inplace(float* x, const float* y, int64_t n, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_elementwise(n);
  add_kernel<<<l.grid_x, l.block, 0, stream>>>(x, y, n);
  SPECLAB_CUDA_CHECK_LAUNCH("add_kernel: bad launch configuration");
}

}  // namespace speclab
