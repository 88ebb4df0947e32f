#include <cmath>

#include "core/cuda/cuda_block_draw.cuh"
#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_draft_sample.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/error.h"

namespace speclab {
namespace {

// out: the CudaDraftSample record (device). next_step: null, or a step buffer [n_past, id]
// the kernel advances to the next one-token step (cuda_draft_sample_async). One block of
// kCudaVerifyBlock threads.
__global__ void draft_sample_kernel(CudaDraftSample* out, const float* q, int64_t vocab, double u,
                                    int32_t* next_step, int32_t advance) {
  __shared__ CudaDrawShared sh;
  __shared__ float red_f[32];
  __shared__ double red_d[32];
  float top = 0.0f;
  double h = 0.0;  // -sum q log q over q > 0, in double as the host
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float x = q[i];
    top = x > top ? x : top;
    if (x > 0.0f) h -= x * log(static_cast<double>(x));
  }
  top = cuda_block_max(top, red_f);
  h = cuda_block_sum(h, red_d);
  const int64_t tok = cuda_block_draw(q, vocab, u, &sh);
  if (threadIdx.x == 0) {
    out->token = static_cast<int32_t>(tok);
    out->top_prob = top;
    const double hn = vocab > 1 ? h / log(static_cast<double>(vocab)) : 0.0;
    out->entropy_norm = static_cast<float>(hn > 0.0 ? hn : 0.0);
    if (next_step != nullptr) {
      next_step[0] += advance;
      next_step[1] = tok >= 0 ? static_cast<int32_t>(tok) : 0;
    }
  }
}

}  // namespace

CudaDraftSample cuda_draft_sample(const float* q, int64_t vocab, double u, cudaStream_t stream) {
  SPECLAB_INPUT_CHECK(u >= 0.0 && u < 1.0, "cuda_draft_sample: u must lie in [0, 1), got ", u);
  SPECLAB_INPUT_CHECK(q != nullptr && vocab > 0, "cuda_draft_sample: empty row");
  CudaDraftSample* d_out = nullptr;
  SPECLAB_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&d_out), sizeof(CudaDraftSample), stream),
      "device out of memory (draft sample)");
  draft_sample_kernel<<<1, kCudaVerifyBlock, 0, stream>>>(d_out, q, vocab, u, nullptr, 0);
  SPECLAB_CUDA_CHECK_LAUNCH("draft_sample_kernel: bad launch configuration");
  CudaDraftSample host;
  SPECLAB_CUDA_CHECK(
      cudaMemcpyAsync(&host, d_out, sizeof(CudaDraftSample), cudaMemcpyDeviceToHost, stream),
      "draft sample copy failed");
  SPECLAB_CUDA_CHECK(cudaFreeAsync(d_out, stream), "draft sample free failed");
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream), "draft_sample_kernel failed");
  SPECLAB_INPUT_CHECK(host.token >= 0, "cuda_draft_sample: all ", vocab, " weights are zero");
  return host;
}

void cuda_draft_sample_async(CudaDraftSample* d_record, int32_t* next_step, int32_t advance,
                             const float* q, int64_t vocab, double u, cudaStream_t stream) {
  SPECLAB_INPUT_CHECK(u >= 0.0 && u < 1.0, "cuda_draft_sample: u must lie in [0, 1), got ", u);
  SPECLAB_INPUT_CHECK(q != nullptr && vocab > 0, "cuda_draft_sample: empty row");
  draft_sample_kernel<<<1, kCudaVerifyBlock, 0, stream>>>(d_record, q, vocab, u, next_step,
                                                          advance);
  SPECLAB_CUDA_CHECK_LAUNCH("draft_sample_kernel: bad launch configuration");
}

}  // namespace speclab
