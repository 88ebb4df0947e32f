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

// Vectors of a row a lane loads before it uses them: with one load in flight per lane and
// 8 warps per block, the H200 streamed a decode step's products at 36% of its copy rate
// (docs/device.md); four in flight quadruple the bytes a multiprocessor waits on at once.
constexpr int kBf16DotVectorsInFlight = 4;
// Vectors of each row loaded ahead with kRows rows a warp: 4 with 1-2 rows (4-8 loads in
// flight a lane), 2 with 4 rows (8 in flight; registers for 4 x 8 sums beside them).
constexpr int cuda_bf16_dot_vectors_ahead(int rows) {
  return rows >= 4 ? kBf16DotVectorsInFlight / 2 : kBf16DotVectorsInFlight;
}

// acc[r][t] = sum_i rows[r][i] * x[t, i] for t < n_tokens, reduced over the warp (every lane
// gets the sums). Lane l takes 16-byte vectors l, l + 32, ... of each row, loading
// kBf16DotVectorsInFlight of them before the first is used, then each against two float4 of
// each token's activations, loaded once for all kRows rows; one fmaf chain per (row, token) in
// the order v = l, l + 32, ... that depends only on n_in (batch invariance: an output does not
// depend on n_tokens, on kRows, nor on how many loads are in flight). Tokens t >= n_tokens
// read token 0's activations into sums never stored: no branch in the loop, so several
// loads are in flight together. At 3-4 tokens one row a warp read 8 float4 of activations from L1
// per 16 bytes of weights, more than L1 serves per weight byte the HBM delivers (the H200's T(k)
// bump at 3-4 tokens, docs/device.md); two rows halve it.
//   rows[r]: [n_in / 8] uint4 (a row may repeat another: its sums are simply not stored)
//   x: [n_tokens, n_in] 16-byte aligned, n_in % 8 == 0
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
  constexpr int kU = cuda_bf16_dot_vectors_ahead(kRows);
  int64_t v = lane;
  auto step = [&](const uint4(&p)[kRows], int64_t vv) {
    // BF16 -> FP32 is a 16-bit shift; element 2i is the low half of word i (little-endian).
    float wf[kRows][8];
#pragma unroll
    for (int r = 0; r < kRows; r++) {
      const uint32_t word[4] = {p[r].x, p[r].y, p[r].z, p[r].w};
#pragma unroll
      for (int k = 0; k < 4; k++) {
        wf[r][2 * k] = __uint_as_float(word[k] << 16);
        wf[r][2 * k + 1] = __uint_as_float(word[k] & 0xffff0000u);
      }
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

// One row: cuda_bf16_rows_dot with kRows = 1 (the fused SwiGLU product and the batched rows
// kernel).
template <int kMaxT>
__device__ inline void cuda_bf16_row_dot(const uint4* row, const float* __restrict__ x,
                                         int64_t n_in, int n_tokens, int lane,
                                         float (&acc)[kMaxT]) {
  const uint4* const rows[1] = {row};
  float acc1[1][kMaxT];
  cuda_bf16_rows_dot<1, kMaxT>(rows, x, n_in, n_tokens, lane, acc1);
#pragma unroll
  for (int t = 0; t < kMaxT; t++) acc[t] = acc1[0][t];
}

}  // namespace speclab
