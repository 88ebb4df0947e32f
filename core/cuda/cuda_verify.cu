#include <vector>

#include "core/cuda/cuda_block_draw.cuh"
#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_buffer.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_philox.h"
#include "core/cuda/cuda_verify.h"
#include "core/cuda/cuda_verify_result.h"

namespace speclab {
namespace {

struct VerifyArgs {
  int n_draft;
  const int32_t* draft;  // [n_draft]
  const float* q;        // [n_draft, vocab] or null
  const float* p;        // [n_draft + 1, vocab]
  int64_t vocab;
  bool greedy;
  double lenience;
  CudaRngKey base;
};

// header: [kCudaVerifyHeader]   diag: [3, n_draft]   residual: [vocab] scratch
__global__ void verify_kernel(VerifyArgs a, int32_t* header, float* diag, float* residual) {
  __shared__ CudaDrawShared sh;
  __shared__ CudaArgmax red_arg[32];
  const int64_t V = a.vocab;
  const bool t0 = threadIdx.x == 0;
  if (t0) {
    header[kVfStatus] = kCudaVerifyOk;
    header[kVfIndex] = 0;
  }
  // Per-position diagnostics, for every drafted position (also past a rejection).
  for (int i = 0; i < a.n_draft; i++) {
    const int32_t d = a.draft[i];
    if (d < 0 || d >= V) {
      if (t0) {
        header[kVfStatus] = kCudaVerifyDraftOutOfRange;
        header[kVfIndex] = i;
      }
      return;
    }
    const float* p_i = a.p + i * V;
    double b;
    float q_d;
    if (a.q) {
      const float* q_i = a.q + i * V;
      double s = 0.0;
      for (int64_t x = threadIdx.x; x < V; x += blockDim.x) s += fminf(p_i[x], q_i[x]);
      b = cuda_block_sum(s, sh.red);
      q_d = q_i[d];
    } else {
      b = p_i[d];  // sum_x min(p(x), [x == d]) = p(d)
      q_d = 1.0f;
    }
    if (t0) {
      diag[i] = p_i[d];
      diag[a.n_draft + i] = q_d;
      diag[2 * a.n_draft + i] = static_cast<float>(b);
    }
  }

  if (a.greedy) {
    const double l = a.lenience;
    int i = 0;
    for (; i < a.n_draft; i++) {
      const float* p_i = a.p + i * V;
      const int32_t best = cuda_block_argmax(p_i, V, red_arg);
      const int32_t d = a.draft[i];
      const bool accept = d == best || (l < 1.0 && p_i[d] >= l * p_i[best]);
      if (!accept) break;
    }
    const int32_t next = cuda_block_argmax(a.p + i * V, V, red_arg);
    if (t0) {
      header[kVfAccepted] = i;
      header[kVfBonus] = i == a.n_draft;
      header[kVfNext] = next;
    }
    return;
  }

  const double l = a.lenience;
  for (int i = 0; i < a.n_draft; i++) {
    const uint64_t pos = a.base.position + i;
    const float* p_i = a.p + i * V;
    const int32_t d = a.draft[i];
    const double p_d = p_i[d];
    const double q_d = a.q ? a.q[i * V + d] : 1.0;
    if (!(q_d > 0.0)) {
      if (t0) {
        header[kVfStatus] = kCudaVerifyDraftQZero;
        header[kVfIndex] = i;
      }
      return;
    }
    // accept iff u * l * q(d) < p(d), u from the same Philox key as the CPU.
    const double u = cuda_rng_uniform(cuda_rng_key_at(a.base, pos, 2 /* kRngAcceptTest */));
    if (u * l * q_d < p_d) continue;

    // Rejected at i: x ~ norm(max(0, p_i - l q_i)); p_i itself when that is all zero.
    int any = 0;
    for (int64_t x = threadIdx.x; x < V; x += blockDim.x) {
      const double qx = a.q ? a.q[i * V + x] : (x == d ? 1.0 : 0.0);
      const double m = fmax(0.0, p_i[x] - l * qx);
      residual[x] = static_cast<float>(m);
      any |= residual[x] > 0.0f;
    }
    __syncthreads();
    any = __syncthreads_or(any);
    const double u_res = cuda_rng_uniform(cuda_rng_key_at(a.base, pos, 3 /* kRngResidualSample */));
    const int64_t next = cuda_block_draw(any ? residual : p_i, V, u_res, &sh);
    if (t0) {
      header[kVfAccepted] = i;
      header[kVfBonus] = 0;
      header[kVfNext] = static_cast<int32_t>(next);
      if (next < 0) {
        header[kVfStatus] = kCudaVerifyAllZero;
        header[kVfIndex] = i;
      }
    }
    return;
  }
  // All drafts accepted: bonus token ~ p[n_draft].
  const double u_bonus = cuda_rng_uniform(
      cuda_rng_key_at(a.base, a.base.position + a.n_draft, 5 /* kRngBonusSample */));
  const int64_t next = cuda_block_draw(a.p + a.n_draft * V, V, u_bonus, &sh);
  if (t0) {
    header[kVfAccepted] = a.n_draft;
    header[kVfBonus] = 1;
    header[kVfNext] = static_cast<int32_t>(next);
    if (next < 0) {
      header[kVfStatus] = kCudaVerifyAllZero;
      header[kVfIndex] = a.n_draft;
    }
  }
}

static_assert(kRngAcceptTest == 2 && kRngResidualSample == 3 && kRngBonusSample == 5,
              "verify_kernel hard-codes the RngStream values of core/rng.h");

}  // namespace

VerifyOutcome cuda_speculative_verify(const CudaVerifyRound& r, const VerifyConfig& cfg,
                                      RngKey base, cudaStream_t stream) {
  cuda_verify_check_args(r.n_draft, r.vocab, r.p != nullptr, r.draft != nullptr, cfg);
  const size_t n_diag = cuda_verify_diag_floats(r.n_draft);
  // One device allocation: header ints, then diag floats, then the residual scratch.
  const size_t header_bytes = sizeof(int32_t) * kCudaVerifyHeader;
  const size_t diag_bytes = sizeof(float) * n_diag;
  uint8_t* buf = nullptr;
  SPECLAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&buf),
                                     64 + diag_bytes + cuda_verify_scratch_bytes(r.vocab), stream),
                     "device out of memory (verify)");
  int32_t* header = reinterpret_cast<int32_t*>(buf);
  float* diag = reinterpret_cast<float*>(buf + 64);
  float* residual = reinterpret_cast<float*>(buf + 64 + ((diag_bytes + 15) / 16) * 16);
  static_assert(sizeof(int32_t) * kCudaVerifyHeader <= 64, "header fits in 64 bytes");
  VerifyArgs a{r.n_draft, r.draft,    r.q,          r.p,
               r.vocab,   cfg.greedy, cfg.lenience, cuda_rng_key_from(base)};
  verify_kernel<<<1, kCudaVerifyBlock, 0, stream>>>(a, header, diag, residual);
  SPECLAB_CUDA_CHECK_LAUNCH("verify_kernel: bad launch configuration");
  std::vector<uint8_t> host(64 + diag_bytes);
  SPECLAB_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), buf, header_bytes, cudaMemcpyDeviceToHost, stream),
      "verify result copy failed");
  if (diag_bytes) {
    SPECLAB_CUDA_CHECK(
        cudaMemcpyAsync(host.data() + 64, diag, diag_bytes, cudaMemcpyDeviceToHost, stream),
        "verify result copy failed");
  }
  SPECLAB_CUDA_CHECK(cudaFreeAsync(buf, stream), "verify free failed");
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream), "verify_kernel failed (bad device pointers?)");
  return cuda_verify_decode(reinterpret_cast<const int32_t*>(host.data()),
                            reinterpret_cast<const float*>(host.data() + 64), r.n_draft,
                            r.draft_host);
}

}  // namespace speclab
