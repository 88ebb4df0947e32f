#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_sampling.h"
#include "core/cuda/cuda_sampling_top_set.h"
#include "core/cuda/cuda_top_set.h"
#include "core/error.h"

namespace speclab {
namespace {

// The row-parallel kernels split each row into chunks of kCudaSamplingChunk logits, one block
// of kCudaSamplingBlock threads per (chunk, row) (core/cuda/cuda_launch_config.h), so that a
// call's rows and a row's 128,256 logits spread over the whole chip (one block per row left 5
// rows of the 3B vocabulary on 5 of 132 multiprocessors: 394 us on an H200, docs/device.md).
// Every reduction runs in a fixed order (threads strided within a chunk, warps, then chunks
// in order), so a row's result depends neither on the other rows of the call nor on
// run-to-run scheduling.
// partial[row, c] = (max, its lowest id) over chunk c of the row.
//   grid (n_chunks, n_rows); partial: [n_rows, n_chunks]
__global__ void argmax_partial_kernel(CudaArgmax* partial, const float* logits, int64_t vocab) {
  __shared__ CudaArgmax shared[32];
  const int64_t row = blockIdx.y, c = blockIdx.x;
  const float* lr = logits + row * vocab;
  const int64_t end = min(vocab, (c + 1) * kCudaSamplingChunk);
  CudaArgmax best{-INFINITY, kCudaArgmaxNoId};
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x) {
    best = cuda_argmax_pick(best, CudaArgmax{lr[i], static_cast<int32_t>(i)});
  }
  best = cuda_block_argmax_pick(best, shared);
  if (threadIdx.x == 0) partial[row * gridDim.x + c] = best;
}

// best[row] = the argmax of the row's n_chunks partials. One warp per row.
__global__ void argmax_final_kernel(int32_t* best, const CudaArgmax* partial, int64_t n_chunks) {
  const int64_t row = blockIdx.x;
  CudaArgmax b{-INFINITY, kCudaArgmaxNoId};
  for (int64_t c = threadIdx.x; c < n_chunks; c += blockDim.x)
    b = cuda_argmax_pick(b, partial[row * n_chunks + c]);
  b = cuda_warp_argmax(b);
  // All values -inf (or NaN): the lowest id, as sampling_argmax returns 0.
  if (threadIdx.x == 0) best[row] = b.id == kCudaArgmaxNoId ? 0 : b.id;
}

// probs[row, :] = one-hot at best[row].   grid (n_chunks, n_rows)
__global__ void one_hot_rows_kernel(float* probs, const int32_t* best, int64_t vocab) {
  const int64_t row = blockIdx.y, c = blockIdx.x;
  float* pr = probs + row * vocab;
  const int64_t end = min(vocab, (c + 1) * kCudaSamplingChunk);
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x)
    pr[i] = i == best[row] ? 1.0f : 0.0f;
}

__device__ inline double row_weight(const float* lr, const int32_t* best, int64_t row, int64_t i,
                                    double inv_t) {
  return cuda_top_weight(lr[i], lr[best[row]], inv_t);
}

// psum[row, c] = sum over chunk c of exp((logit - max) / T), in double.   grid (n_chunks, n_rows)
__global__ void weight_sum_partial_kernel(double* psum, const float* logits, const int32_t* best,
                                          int64_t vocab, double inv_t) {
  __shared__ double shared[32];
  const int64_t row = blockIdx.y, c = blockIdx.x;
  const float* lr = logits + row * vocab;
  const int64_t end = min(vocab, (c + 1) * kCudaSamplingChunk);
  double s = 0.0;
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x)
    s += row_weight(lr, best, row, i, inv_t);
  s = cuda_block_sum(s, shared);
  if (threadIdx.x == 0) psum[row * gridDim.x + c] = s;
}

// probs[row, i] = exp((logit_i - max) / T) / (the row's psum added in chunk order): the
// weights recomputed (the same expression, hence the same doubles) rather than stored.
//   grid (n_chunks, n_rows)
__global__ void normalize_rows_kernel(float* probs, const float* logits, const int32_t* best,
                                      const double* psum, int64_t vocab, double inv_t) {
  const int64_t row = blockIdx.y, c = blockIdx.x, n_chunks = gridDim.x;
  double total = 0.0;
  for (int64_t j = 0; j < n_chunks; j++) total += psum[row * n_chunks + j];
  const float* lr = logits + row * vocab;
  float* pr = probs + row * vocab;
  const int64_t end = min(vocab, (c + 1) * kCudaSamplingChunk);
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x)
    pr[i] = static_cast<float>(row_weight(lr, best, row, i, inv_t) / total);
}

}  // namespace

void cuda_sampling_standardize(float* probs, const float* logits, int64_t n_rows, int64_t vocab,
                               const SamplingParams& sp, cudaStream_t stream) {
  sampling_validate(sp);
  SPECLAB_INPUT_CHECK(vocab > 0 && n_rows >= 1, "cuda_sampling_standardize: empty input");
  SPECLAB_INPUT_CHECK(n_rows <= kCudaMaxGridY && vocab <= INT32_MAX,
                      "cuda_sampling_standardize: ", n_rows, " rows of ", vocab,
                      " logits exceed the kernels' grid");
  const int64_t n_chunks = cuda_sampling_chunks(vocab);
  const dim3 rows_grid(static_cast<unsigned>(n_chunks), static_cast<unsigned>(n_rows));
  // Row scratch: best [n_rows] int32, partial [n_rows, n_chunks] (max, id), psum [n_rows,
  // n_chunks] double; 8-byte members first.
  uint8_t* scratch = nullptr;
  const size_t n_part = static_cast<size_t>(n_rows * n_chunks);
  SPECLAB_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&scratch),
                      n_part * (sizeof(double) + sizeof(CudaArgmax)) + sizeof(int32_t) * n_rows,
                      stream),
      "device out of memory (sampling)");
  double* psum = reinterpret_cast<double*>(scratch);
  CudaArgmax* partial = reinterpret_cast<CudaArgmax*>(psum + n_part);
  int32_t* best = reinterpret_cast<int32_t*>(partial + n_part);
  argmax_partial_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(partial, logits, vocab);
  SPECLAB_CUDA_CHECK_LAUNCH("argmax_partial_kernel: bad launch configuration");
  argmax_final_kernel<<<static_cast<unsigned>(n_rows), 32, 0, stream>>>(best, partial, n_chunks);
  SPECLAB_CUDA_CHECK_LAUNCH("argmax_final_kernel: bad launch configuration");
  if (sp.temperature == 0.0f) {
    one_hot_rows_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(probs, best, vocab);
    SPECLAB_CUDA_CHECK_LAUNCH("one_hot_rows_kernel: bad launch configuration");
    SPECLAB_CUDA_CHECK(cudaFreeAsync(scratch, stream), "sampling free failed");
    return;
  }
  const double inv_t = 1.0 / static_cast<double>(sp.temperature);
  const bool use_top_k = sp.top_k > 0 && sp.top_k < vocab;
  const bool use_top_p = sp.top_p < 1.0f;
  if (!use_top_k && !use_top_p) {
    // Temperature only: every row at once, two passes over the logits.
    weight_sum_partial_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(psum, logits, best,
                                                                            vocab, inv_t);
    SPECLAB_CUDA_CHECK_LAUNCH("weight_sum_partial_kernel: bad launch configuration");
    normalize_rows_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(probs, logits, best, psum,
                                                                        vocab, inv_t);
    SPECLAB_CUDA_CHECK_LAUNCH("normalize_rows_kernel: bad launch configuration");
    SPECLAB_CUDA_CHECK(cudaFreeAsync(scratch, stream), "sampling free failed");
    return;
  }
  // Top-k / top-p: every row at once, without a sort (core/cuda/cuda_top_set.h).
  cuda_sampling_top_set(probs, logits, best, n_rows, vocab, sp, stream);
  SPECLAB_CUDA_CHECK(cudaFreeAsync(scratch, stream), "sampling free failed");
}

}  // namespace speclab
