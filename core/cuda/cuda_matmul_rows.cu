#include <cstdint>

#include "core/cuda/cuda_bf16_dot.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_matmul_rows.h"
#include "core/cuda/cuda_ops.h"
#include "core/error.h"

namespace speclab {
namespace {

constexpr int kRowsWarpsPerBlock = 8;

// One warp per (output row, chunk of kCudaMatmulRowsChunk input rows); block b serves chunk
// b % n_chunks of output rows [(b / n_chunks) * 8, + 8), so the chunks of one weight row run in
// neighbouring blocks. The dot product is cuda_bf16_row_dot's (one fmaf chain per input row in
// an order fixed by n_in, then a fixed warp reduction): an output depends on its input row and
// the weight row only.
//   segment s: out[s] [n_rows, rows[s]]   x: [n_rows, n_in] 16-byte aligned, n_in % 8 == 0
__global__ void matmul_rows_bf16_kernel(Bf16VecSegments seg, const float* __restrict__ x,
                                        int64_t n_in, int64_t n_rows, int64_t n_chunks) {
  const int lane = threadIdx.x % kCudaWarp;
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) % n_chunks;
  int64_t r =
      (static_cast<int64_t>(blockIdx.x) / n_chunks) * kRowsWarpsPerBlock + threadIdx.x / kCudaWarp;
  const int s = cuda_bf16_segment_of(seg, &r);
  if (s == seg.n) return;  // whole warp leaves together
  const int64_t t0 = chunk * kCudaMatmulRowsChunk;
  const int64_t left = n_rows - t0;
  const int n_t = static_cast<int>(left < kCudaMatmulRowsChunk ? left : kCudaMatmulRowsChunk);
  float acc[kCudaMatmulRowsChunk];
  cuda_bf16_row_dot<kCudaMatmulRowsChunk>(cuda_bf16_segment_w(seg, s) + r * (n_in / 8),
                                          x + t0 * n_in, n_in, n_t, lane, acc);
  float* out = cuda_bf16_segment_out(seg, s);
  const int64_t n_out = cuda_bf16_segment_rows(seg, s);
#pragma unroll
  for (int t = 0; t < kCudaMatmulRowsChunk; t++) {
    if (lane == 0 && t < n_t) {
      if (seg.accumulate) {
        out[(t0 + t) * n_out + r] += acc[t];
      } else {
        out[(t0 + t) * n_out + r] = acc[t];
      }
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void matmul_rows_bf16(const Bf16VecSegments& seg, const float* x, int64_t n_in, int64_t n_rows,
                      cudaStream_t stream) {
  SPECLAB_ASSERT(n_rows >= 1 && aligned16(x));
  int64_t rows = 0;
  for (int s = 0; s < seg.n; s++) rows += seg.rows[s];
  const int64_t n_chunks = cuda_ceil_div(n_rows, kCudaMatmulRowsChunk);
  const int64_t grid = cuda_ceil_div(rows, kRowsWarpsPerBlock) * n_chunks;
  SPECLAB_ASSERT(grid <= kCudaMaxGridX);
  matmul_rows_bf16_kernel<<<grid, kRowsWarpsPerBlock * kCudaWarp, 0, stream>>>(seg, x, n_in, n_rows,
                                                                               n_chunks);
  SPECLAB_CUDA_CHECK_LAUNCH("matmul_rows_bf16_kernel: bad launch configuration");
}

// Segments of the BF16 path for n products of the same input (all served by it).
template <int N>
Bf16VecSegments segments(float* const (&out)[N], const CudaWeightView (&w)[N], bool accumulate) {
  Bf16VecSegments seg;
  for (int s = 0; s < N; s++) {
    seg.w[s] = static_cast<const uint4*>(w[s].data);
    seg.out[s] = out[s];
    seg.rows[s] = w[s].rows;
  }
  seg.n = N;
  seg.accumulate = accumulate;
  return seg;
}

// The N products of one input: one launch when the BF16 path serves all of them with the same
// n_in, else one cuda_matmul_rows each (the same floats per output either way).
template <int N>
void matmul_rows_n(float* const (&out)[N], const float* x, const CudaWeightView (&w)[N],
                   int64_t n_rows, cudaStream_t stream) {
  bool fuse = true;
  for (const CudaWeightView& wi : w)
    fuse = fuse && cuda_matmul_rows_vectorized(wi) && wi.cols == w[0].cols;
  if (!fuse) {
    for (int s = 0; s < N; s++) cuda_matmul_rows(out[s], x, w[s], n_rows, stream);
    return;
  }
  matmul_rows_bf16(segments<N>(out, w, false), x, w[0].cols, n_rows, stream);
}

}  // namespace

bool cuda_matmul_rows_vectorized(const CudaWeightView& w) {
  return w.dtype == DType::BF16 && w.cols % 8 == 0 && aligned16(w.data);
}

void cuda_matmul_rows(float* out, const float* x, const CudaWeightView& w, int64_t n_rows,
                      cudaStream_t stream) {
  if (cuda_matmul_rows_vectorized(w)) {
    float* const o[1] = {out};
    const CudaWeightView ws[1] = {w};
    matmul_rows_bf16(segments<1>(o, ws, false), x, w.cols, n_rows, stream);
    return;
  }
  cuda_matmul_weights_kernel(out, x, w, n_rows, stream);
}

void cuda_matmul_rows3(float* const (&out)[3], const float* x, const CudaWeightView (&w)[3],
                       int64_t n_rows, cudaStream_t stream) {
  matmul_rows_n<3>(out, x, w, n_rows, stream);
}

void cuda_matmul_rows2(float* const (&out)[2], const float* x, const CudaWeightView (&w)[2],
                       int64_t n_rows, cudaStream_t stream) {
  matmul_rows_n<2>(out, x, w, n_rows, stream);
}

void cuda_matmul_rows_add(float* x_io, const float* in, const CudaWeightView& w, int64_t n_rows,
                          float* scratch, cudaStream_t stream) {
  if (cuda_matmul_rows_vectorized(w)) {
    float* const o[1] = {x_io};
    const CudaWeightView ws[1] = {w};
    matmul_rows_bf16(segments<1>(o, ws, true), in, w.cols, n_rows, stream);
    return;
  }
  cuda_matmul_rows(scratch, in, w, n_rows, stream);
  cuda_add_inplace(x_io, scratch, n_rows * w.rows, stream);
}

}  // namespace speclab
