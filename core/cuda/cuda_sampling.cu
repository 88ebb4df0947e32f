#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_sampling.h"
#include "core/error.h"

namespace speclab {
namespace {

constexpr int kBlock = 1024;

// One block per row: best[row] = argmax of the row.
__global__ void argmax_rows_kernel(int32_t* best, const float* logits, int64_t vocab) {
  __shared__ CudaArgmax shared[32];
  const int32_t b = cuda_block_argmax(logits + blockIdx.x * vocab, vocab, shared);
  if (threadIdx.x == 0) best[blockIdx.x] = b;
}

// One block per row: probs = one-hot at best[row].
__global__ void one_hot_kernel(float* probs, const int32_t* best, int64_t vocab) {
  float* pr = probs + blockIdx.x * vocab;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    pr[i] = i == best[blockIdx.x] ? 1.0f : 0.0f;
}

// weight[i] = exp((logit_i - max) / T) for one row.   weight: [vocab]
__global__ void weights_kernel(double* weight, const float* logits, const int32_t* best,
                               int64_t vocab, double inv_t) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= vocab) return;
  const double max_logit = logits[*best];
  weight[i] = exp((static_cast<double>(logits[i]) - max_logit) * inv_t);
}

// Single block: probs = weight / sum(weight) (no top-k / top-p).
__global__ void normalize_kernel(float* probs, const double* weight, int64_t vocab) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) s += weight[i];
  s = cuda_block_sum(s, shared);
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
    probs[i] = static_cast<float>(weight[i] / s);
}

// sorted_weight[j] = weight[ids[j]]
__global__ void gather_kernel(double* sorted_weight, const double* weight, const int32_t* ids,
                              int64_t vocab) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < vocab) sorted_weight[j] = weight[ids[j]];
}

// One thread: from the inclusive scan cum[] of the sorted weights, the number of kept ids
// and their mass, as the CPU computes them.
__global__ void keep_count_kernel(int64_t* n_keep_out, double* kept_mass_out, const double* cum,
                                  int64_t vocab, int top_k, float top_p) {
  int64_t n_keep = (top_k > 0 && top_k < vocab) ? top_k : vocab;
  double kept_mass = cum[n_keep - 1];
  if (top_p < 1.0f) {
    const double need = static_cast<double>(top_p) * kept_mass;
    int64_t lo = 0, hi = n_keep - 1;  // first j with cum[j] >= need (cum is nondecreasing)
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (cum[mid] >= need)
        hi = mid;
      else
        lo = mid + 1;
    }
    n_keep = lo + 1;
    kept_mass = cum[n_keep - 1];
  }
  *n_keep_out = n_keep;
  *kept_mass_out = kept_mass;
}

__global__ void scatter_kept_kernel(float* probs, const double* weight, const int32_t* ids,
                                    const int64_t* n_keep, const double* kept_mass, int64_t vocab) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= vocab) return;
  // probs was zeroed before; only the kept prefix is written.
  if (j < *n_keep) probs[ids[j]] = static_cast<float>(weight[ids[j]] / *kept_mass);
}

}  // namespace

void cuda_sampling_standardize(float* probs, const float* logits, int64_t n_rows, int64_t vocab,
                               const SamplingParams& sp, cudaStream_t stream) {
  sampling_validate(sp);
  SPECLAB_INPUT_CHECK(vocab > 0 && n_rows >= 1, "cuda_sampling_standardize: empty input");
  int32_t* best = nullptr;  // [n_rows]
  SPECLAB_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&best), sizeof(int32_t) * n_rows, stream),
      "device out of memory (sampling)");
  argmax_rows_kernel<<<n_rows, kBlock, 0, stream>>>(best, logits, vocab);
  SPECLAB_CUDA_CHECK_LAUNCH("argmax_rows_kernel: bad launch configuration");
  if (sp.temperature == 0.0f) {
    one_hot_kernel<<<n_rows, kBlock, 0, stream>>>(probs, best, vocab);
    SPECLAB_CUDA_CHECK_LAUNCH("one_hot_kernel: bad launch configuration");
    SPECLAB_CUDA_CHECK(cudaFreeAsync(best, stream), "sampling free failed");
    return;
  }
  // Workspace per row (reused): see cuda_sampling_workspace_bytes.
  uint8_t* ws = nullptr;
  SPECLAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ws),
                                     cuda_sampling_workspace_bytes(vocab) + 64, stream),
                     "device out of memory (sampling workspace)");
  double* weight = reinterpret_cast<double*>(ws);           // [vocab]
  double* cum = weight + vocab;                             // [vocab]
  float* keys = reinterpret_cast<float*>(cum + vocab);      // [vocab]
  int32_t* ids = reinterpret_cast<int32_t*>(keys + vocab);  // [vocab]
  int64_t* n_keep = reinterpret_cast<int64_t*>(ws + cuda_sampling_workspace_bytes(vocab));
  double* kept_mass = reinterpret_cast<double*>(n_keep + 1);

  const bool use_top_k = sp.top_k > 0 && sp.top_k < vocab;
  const bool use_top_p = sp.top_p < 1.0f;
  const CudaLaunch l = cuda_launch_elementwise(vocab);
  const double inv_t = 1.0 / static_cast<double>(sp.temperature);
  auto policy = thrust::cuda::par.on(stream);
  for (int64_t r = 0; r < n_rows; r++) {
    const float* lr = logits + r * vocab;
    float* pr = probs + r * vocab;
    weights_kernel<<<l.grid_x, l.block, 0, stream>>>(weight, lr, best + r, vocab, inv_t);
    SPECLAB_CUDA_CHECK_LAUNCH("weights_kernel: bad launch configuration");
    if (!use_top_k && !use_top_p) {
      normalize_kernel<<<1, kBlock, 0, stream>>>(pr, weight, vocab);
      SPECLAB_CUDA_CHECK_LAUNCH("normalize_kernel: bad launch configuration");
      continue;
    }
    // Candidate order: larger logit first, ties -> lower id (stable sort of ids 0..n-1).
    SPECLAB_CUDA_CHECK(
        cudaMemcpyAsync(keys, lr, sizeof(float) * vocab, cudaMemcpyDeviceToDevice, stream),
        "logits copy failed");
    thrust::sequence(policy, ids, ids + vocab);
    thrust::stable_sort_by_key(policy, keys, keys + vocab, ids, thrust::greater<float>());
    gather_kernel<<<l.grid_x, l.block, 0, stream>>>(cum, weight, ids, vocab);
    SPECLAB_CUDA_CHECK_LAUNCH("gather_kernel: bad launch configuration");
    thrust::inclusive_scan(policy, cum, cum + vocab, cum);
    keep_count_kernel<<<1, 1, 0, stream>>>(n_keep, kept_mass, cum, vocab, sp.top_k, sp.top_p);
    SPECLAB_CUDA_CHECK_LAUNCH("keep_count_kernel: bad launch configuration");
    SPECLAB_CUDA_CHECK(cudaMemsetAsync(pr, 0, sizeof(float) * vocab, stream), "probs clear failed");
    scatter_kept_kernel<<<l.grid_x, l.block, 0, stream>>>(pr, weight, ids, n_keep, kept_mass,
                                                          vocab);
    SPECLAB_CUDA_CHECK_LAUNCH("scatter_kept_kernel: bad launch configuration");
  }
  SPECLAB_CUDA_CHECK(cudaFreeAsync(ws, stream), "sampling free failed");
  SPECLAB_CUDA_CHECK(cudaFreeAsync(best, stream), "sampling free failed");
}

}  // namespace speclab
