// One warp's dot products of a BF16 weight row with the FP32 activations of a few tokens:
// the inner loop of matmul_bf16_vec_kernel (core/cuda/cuda_matmul.cu), shared with the fused
// SwiGLU product (core/cuda/cuda_matmul_swiglu.cu) so that both sum in exactly the same order
// and the fused kernel's gate and up values equal the unfused products bit for bit.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_launch_config.h"

namespace speclab {

// Up to three BF16 products of the same activations in one launch (the Q, K, V projections;
// gate and up), optionally added into their outputs (the residual add after wo and w_down).
// Shared by the vectorized BF16 kernel (core/cuda/cuda_matmul.cu) and the batch-invariant
// rows kernel (core/cuda/cuda_matmul_rows.cu).
//   segment s: w[s] [rows[s], n_in] BF16 rows 16-byte aligned, out[s] [n_tokens, rows[s]]
struct Bf16VecSegments {
  const uint4* w[3] = {nullptr, nullptr, nullptr};
  float* out[3] = {nullptr, nullptr, nullptr};
  int64_t rows[3] = {0, 0, 0};
  int n = 0;                // segments in use, 1..3
  bool accumulate = false;  // out += x · Wᵀ instead of out = x · Wᵀ
};

// The segment that output row *r (counted over all segments) falls in, with *r made relative
// to it; seg.n when *r lies past the last segment. The members are read with constant indices
// only (here and in the pickers below): a kernel argument indexed at run time is copied to
// local memory (an 80-byte stack frame in every BF16 product kernel of the H200 build), and
// each warp then waited on that copy before its first weight load.
__device__ inline int cuda_bf16_segment_of(const Bf16VecSegments& seg, int64_t* r) {
  if (seg.n < 1 || *r < seg.rows[0]) return 0;
  *r -= seg.rows[0];
  if (seg.n < 2 || *r < seg.rows[1]) return 1;
  *r -= seg.rows[1];
  if (seg.n < 3 || *r < seg.rows[2]) return 2;
  *r -= seg.rows[2];
  return 3;
}

// seg.w[s], seg.out[s], seg.rows[s] for s in 0..2, by constant indices.
__device__ inline const uint4* cuda_bf16_segment_w(const Bf16VecSegments& seg, int s) {
  return s == 0 ? seg.w[0] : s == 1 ? seg.w[1] : seg.w[2];
}
__device__ inline float* cuda_bf16_segment_out(const Bf16VecSegments& seg, int s) {
  return s == 0 ? seg.out[0] : s == 1 ? seg.out[1] : seg.out[2];
}
__device__ inline int64_t cuda_bf16_segment_rows(const Bf16VecSegments& seg, int s) {
  return s == 0 ? seg.rows[0] : s == 1 ? seg.rows[1] : seg.rows[2];
}

// acc[t] += the products of one 16-byte vector of the row (8 BF16 weights, p) with the
// activations of vector v of each token; one fmaf chain per token in element order. Tokens
// t >= n_tokens read token 0's activations and their sums are never stored: no branch in the
// loop, so the loads of several vectors can be in flight together.
template <int kMaxT>
__device__ inline void cuda_bf16_vec_fma(const uint4 p, const float* __restrict__ x, int64_t n_in,
                                         int64_t v, int n_tokens, float (&acc)[kMaxT]) {
  // BF16 -> FP32 is a 16-bit shift; element 2i is the low half of word i (little-endian).
  const float wf[8] = {__uint_as_float(p.x << 16), __uint_as_float(p.x & 0xffff0000u),
                       __uint_as_float(p.y << 16), __uint_as_float(p.y & 0xffff0000u),
                       __uint_as_float(p.z << 16), __uint_as_float(p.z & 0xffff0000u),
                       __uint_as_float(p.w << 16), __uint_as_float(p.w & 0xffff0000u)};
#pragma unroll
  for (int t = 0; t < kMaxT; t++) {
    const int tt = t < n_tokens ? t : 0;
    const float4* xv = reinterpret_cast<const float4*>(x + tt * n_in) + 2 * v;
    const float4 a = __ldg(xv), b = __ldg(xv + 1);
    float s = acc[t];
    s = fmaf(wf[0], a.x, s);
    s = fmaf(wf[1], a.y, s);
    s = fmaf(wf[2], a.z, s);
    s = fmaf(wf[3], a.w, s);
    s = fmaf(wf[4], b.x, s);
    s = fmaf(wf[5], b.y, s);
    s = fmaf(wf[6], b.z, s);
    s = fmaf(wf[7], b.w, s);
    acc[t] = s;
  }
}

// Vectors of a row a lane loads before it uses them: with one load in flight per lane and
// 8 warps per block, the H200 streamed a decode step's products at 36% of its copy rate
// (docs/device.md); four in flight quadruple the bytes a multiprocessor waits on at once.
constexpr int kBf16DotVectorsInFlight = 4;

// acc[t] = sum_i row[i] * x[t, i] for t < n_tokens, reduced over the warp (every lane gets
// the sums). Lane l takes 16-byte vectors l, l + 32, ... of the row, loading
// kBf16DotVectorsInFlight of them before the first is used, then each against two float4 of
// each token's activations; one fmaf chain per token in the order v = l, l + 32, ... that
// depends only on n_in (batch invariance: an output does not depend on n_tokens, nor on how
// many loads are in flight).
//   row: [n_in / 8] uint4 (n_in BF16)   x: [n_tokens, n_in] 16-byte aligned, n_in % 8 == 0
template <int kMaxT>
__device__ inline void cuda_bf16_row_dot(const uint4* __restrict__ row, const float* __restrict__ x,
                                         int64_t n_in, int n_tokens, int lane,
                                         float (&acc)[kMaxT]) {
#pragma unroll
  for (int t = 0; t < kMaxT; t++) acc[t] = 0.0f;
  const int64_t n_vec = n_in / 8;
  constexpr int kU = kBf16DotVectorsInFlight;
  int64_t v = lane;
  for (; v + (kU - 1) * kCudaWarp < n_vec; v += kU * kCudaWarp) {
    uint4 p[kU];
#pragma unroll
    for (int u = 0; u < kU; u++) p[u] = __ldg(row + v + u * kCudaWarp);
#pragma unroll
    for (int u = 0; u < kU; u++)
      cuda_bf16_vec_fma<kMaxT>(p[u], x, n_in, v + u * kCudaWarp, n_tokens, acc);
  }
  for (; v < n_vec; v += kCudaWarp)
    cuda_bf16_vec_fma<kMaxT>(__ldg(row + v), x, n_in, v, n_tokens, acc);
#pragma unroll
  for (int t = 0; t < kMaxT; t++) acc[t] = cuda_warp_sum(acc[t]);
}

// kRows rows of the same activations at once: acc[r][t] is exactly what cuda_bf16_row_dot
// gives for rows[r] (each row's vectors in the same lane order, each token's fmaf chain in
// the same element order), but each token's two float4 of activations are loaded once for
// all kRows rows. At 3-4 tokens one row a warp read 8 float4 of activations from L1 per 16
// bytes of weights, more than L1 serves per weight byte the HBM delivers (the H200's T(k)
// bump at 3-4 tokens, docs/device.md); two rows halve it.
//   rows[r]: [n_in / 8] uint4 (a row may repeat another: its sums are simply not stored)
template <int kRows, int kMaxT>
__device__ inline void cuda_bf16_rows_dot(const uint4* const (&rows)[kRows],
                                          const float* __restrict__ x, int64_t n_in, int n_tokens,
                                          int lane, float (&acc)[kRows][kMaxT]) {
#pragma unroll
  for (int r = 0; r < kRows; r++) {
#pragma unroll
    for (int t = 0; t < kMaxT; t++) acc[r][t] = 0.0f;
  }
  const int64_t n_vec = n_in / 8;
  constexpr int kU = kBf16DotVectorsInFlight;
  int64_t v = lane;
  auto step = [&](const uint4(&p)[kRows], int64_t vv) {
    float wf[kRows][8];
#pragma unroll
    for (int r = 0; r < kRows; r++) {
      wf[r][0] = __uint_as_float(p[r].x << 16);
      wf[r][1] = __uint_as_float(p[r].x & 0xffff0000u);
      wf[r][2] = __uint_as_float(p[r].y << 16);
      wf[r][3] = __uint_as_float(p[r].y & 0xffff0000u);
      wf[r][4] = __uint_as_float(p[r].z << 16);
      wf[r][5] = __uint_as_float(p[r].z & 0xffff0000u);
      wf[r][6] = __uint_as_float(p[r].w << 16);
      wf[r][7] = __uint_as_float(p[r].w & 0xffff0000u);
    }
#pragma unroll
    for (int t = 0; t < kMaxT; t++) {
      const int tt = t < n_tokens ? t : 0;
      const float4* xv = reinterpret_cast<const float4*>(x + tt * n_in) + 2 * vv;
      const float4 a = __ldg(xv), b = __ldg(xv + 1);
#pragma unroll
      for (int r = 0; r < kRows; r++) {
        float s = acc[r][t];
        s = fmaf(wf[r][0], a.x, s);
        s = fmaf(wf[r][1], a.y, s);
        s = fmaf(wf[r][2], a.z, s);
        s = fmaf(wf[r][3], a.w, s);
        s = fmaf(wf[r][4], b.x, s);
        s = fmaf(wf[r][5], b.y, s);
        s = fmaf(wf[r][6], b.z, s);
        s = fmaf(wf[r][7], b.w, s);
        acc[r][t] = s;
      }
    }
  };
  for (; v + (kU - 1) * kCudaWarp < n_vec; v += kU * kCudaWarp) {
    uint4 p[kU][kRows];
#pragma unroll
    for (int u = 0; u < kU; u++) {
#pragma unroll
      for (int r = 0; r < kRows; r++) p[u][r] = __ldg(rows[r] + v + u * kCudaWarp);
    }
#pragma unroll
    for (int u = 0; u < kU; u++) step(p[u], v + u * kCudaWarp);
  }
  for (; v < n_vec; v += kCudaWarp) {
    uint4 p[kRows];
#pragma unroll
    for (int r = 0; r < kRows; r++) p[r] = __ldg(rows[r] + v);
    step(p, v);
  }
#pragma unroll
  for (int r = 0; r < kRows; r++) {
#pragma unroll
    for (int t = 0; t < kMaxT; t++) acc[r][t] = cuda_warp_sum(acc[r][t]);
  }
}

}  // namespace speclab
