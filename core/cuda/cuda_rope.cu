#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_rope.h"

namespace speclab {
namespace {

// One thread per (token, head, pair).
__global__ void rope_kernel(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                            int64_t pos0, const float* inv_freq, bool interleaved) {
  const int64_t half = head_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_tokens * n_heads * half) return;
  const int64_t i = idx % half;
  const int64_t th = idx / half;  // t * n_heads + h
  const int64_t t = th / n_heads;
  const double angle = static_cast<double>(pos0 + t) * inv_freq[i];
  const float c = static_cast<float>(cos(angle));
  const float s = static_cast<float>(sin(angle));
  float* v = x + th * head_dim;
  float* a = v + (interleaved ? 2 * i : i);
  float* b = a + (interleaved ? 1 : half);
  const float va = *a, vb = *b;
  *a = va * c - vb * s;
  *b = va * s + vb * c;
}

}  // namespace

void cuda_rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                     const float* inv_freq, bool interleaved, cudaStream_t stream) {
  const CudaLaunch l = cuda_launch_elementwise(n_tokens * n_heads * (head_dim / 2));
  rope_kernel<<<l.grid_x, l.block, 0, stream>>>(x, n_tokens, n_heads, head_dim, pos0, inv_freq,
                                                interleaved);
  SPECLAB_CUDA_CHECK_LAUNCH("rope_kernel: bad launch configuration");
}

}  // namespace speclab
