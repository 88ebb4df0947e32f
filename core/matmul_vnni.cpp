// AVX-512 VNNI kernels: Q8_0 / Q4_0 / Q4_1 weights times int8 activations (vpdpbusd).
//
// vpdpbusd multiplies unsigned bytes by signed bytes and adds each group of 4 products into a
// 32-bit lane. The activations are the signed side; the weights are made unsigned: Q4 nibbles
// already are (0..15), Q8_0 values get +128 (xor 0x80). The offsets this adds, 8 or 128 times
// the lane's 4 activations, are precomputed per lane when the activations are packed and are
// the accumulator vpdpbusd starts from, so every lane holds the exact integer sum of its 4
// products w_j * q_j with the format's signed w_j (Q4_0: nibble - 8). Q4_1 has no offset; its
// minimum m contributes m * dx * sum(q), a second FMA against a per-lane precomputed term.
//
// One 64-byte vector is two blocks (lanes 0..7: block 2s, 8..15: block 2s + 1). Per step the
// 16 integer lanes are converted to FP32 and multiplied by dw * dx of their block into one
// 16-lane FP32 accumulator per (row, token); at the end a fixed tree sums the 16 lanes.
//
// Work items, column segments and prefetch as on the FP32-activation path (core/matmul_avx512.cpp):
// the accumulators of a tile are parked between segments and token groups without rounding.
//
// Summation order of one output (row r, token t), the same in every tile shape and work split:
// the accumulator over the steps in order, then the fixed tree. So a token's outputs are
// bit-identical whether it is computed alone or in a batch, on any number of threads (batch
// invariance), as on the FP32-activation paths.
#include "core/matmul_vnni.h"

// GCC 12's AVX-512 headers build some intrinsics from an "undefined" register (GCC bug 105593;
// see core/matmul_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

namespace speclab {
namespace matmul_vnni {
namespace {

#define SPECLAB_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define SPECLAB_UNROLL _Pragma("GCC unroll 16")

SPECLAB_VNNI inline float hsum(__m512 v) {
  const __m256 lo = _mm512_extractf32x8_ps(v, 0);
  const __m256 hi = _mm512_extractf32x8_ps(v, 1);
  __m256 s = _mm256_add_ps(lo, hi);                                               // 8 lanes
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // 4 lanes
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));                                         // 2 lanes
  a = _mm_add_ss(a, _mm_movehdup_ps(a));                                          // 1 lane
  return _mm_cvtss_f32(a);
}

SPECLAB_VNNI inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// [a x 8, b x 8]
SPECLAB_VNNI inline __m512 two_scales(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// Weight loaders. load<kTwo>(p, ...): p points at block 2s of a row; kTwo: blocks 2s and
// 2s + 1, else block 2s only (the last step of a row with an odd block count; the other half
// is zero, as are its activations and scales). Out: wq the 64 unsigned bytes in element
// order, dw the blocks' scales as two_scales, mv (Q4_1) the minimums likewise.
struct LoadQ8_0 {  // {fp16 d; int8 qs[32]}
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static constexpr bool kHasMin = false;
  template <bool kTwo>
  SPECLAB_VNNI static inline void load(const uint8_t* p, __m512i* wq, __m512* dw, __m512*) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i hi =
        kTwo ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kBytes + 2))
             : _mm256_set1_epi8(static_cast<char>(0x80));  // +128 below gives 0 (times q = 0)
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    *wq = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // w + 128
    *dw = two_scales(half_at(p), kTwo ? half_at(p + kBytes) : 0.0f);
  }
};

template <bool kMin>
struct LoadQ4 {  // Q4_0 {fp16 d; uint8 qs[16]}, Q4_1 {fp16 d; fp16 m; uint8 qs[16]}
  static constexpr size_t kBytes = kMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  static constexpr size_t kQs = kMin ? 4 : 2;
  static constexpr bool kHasMin = kMin;
  template <bool kTwo>
  SPECLAB_VNNI static inline void load(const uint8_t* p, __m512i* wq, __m512* dw, __m512* mv) {
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQs));
    const __m128i q1 = kTwo ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kBytes + kQs))
                            : _mm_setzero_si128();
    // [q0, q0, q1, q1] by 128-bit lanes, then the high nibbles in lanes 1 and 3: the elements
    // of block 2s (low nibbles 0..15, high 16..31), then those of block 2s + 1.
    const __m512i v =
        _mm512_zextsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1));
    const __m512i dup = _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(1, 1, 0, 0));
    const __m512i shifted = _mm512_mask_srli_epi16(dup, 0xFF00FF00u, dup, 4);
    *wq = _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
    *dw = two_scales(half_at(p), kTwo ? half_at(p + kBytes) : 0.0f);
    if (kMin) *mv = two_scales(half_at(p + 2), kTwo ? half_at(p + kBytes + 2) : 0.0f);
  }
};

// acc[r][t] += one step (64 values) of rows r against tokens t. rec: the step's records.
template <class L, int R, int T>
SPECLAB_VNNI inline void step(__m512 (&acc)[R][T], const __m512i (&wq)[R], const __m512 (&dw)[R],
                              const __m512 (&mv)[R], const uint8_t* rec) {
  SPECLAB_UNROLL for (int t = 0; t < T; t++) {
    const uint8_t* x = rec + t * kRecordBytes;
    const __m512i xq = _mm512_loadu_si512(x);
    const __m512 dx = _mm512_loadu_ps(reinterpret_cast<const float*>(x + 64));
    const __m512i aux_i = _mm512_loadu_si512(x + 128);
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      const __m512i p = _mm512_dpbusd_epi32(L::kHasMin ? _mm512_setzero_si512() : aux_i, wq[r], xq);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw[r], dx), acc[r][t]);
      if (L::kHasMin) acc[r][t] = _mm512_fmadd_ps(mv[r], _mm512_castsi512_ps(aux_i), acc[r][t]);
    }
  }
}

// Accumulators of a work item between segments: row j, token t at acc[j * kAccStride + 16 t].
constexpr int kMaxRows = 12;  // rows per work item (matmul_avx512::kRowBlock)
constexpr int kMaxTokens = 8;
constexpr int kAccStride = kMaxTokens * 16;

// A register tile of R rows x T tokens over the steps [s0, s1) of one column segment, plus the
// lone last block of a row with an odd block count (at step s1) when lone. first: start from
// zero, else from acc; the accumulators are parked in acc afterwards (exactly: a store and a
// reload change no bit). pf: prefetch distance in bytes.
template <class L, int R, int T>
SPECLAB_VNNI void tile(const uint8_t* row0, size_t row_bytes, const uint8_t* xq, int64_t xs,
                       int64_t s0, int64_t s1, bool lone, bool first, float* acc, int64_t pf) {
  __m512 a[R][T];
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      a[r][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + r * kAccStride + 16 * t);
    }
  }
  __m512i wq[R];
  __m512 dw[R], mv[R];
  SPECLAB_UNROLL for (int r = 0; r < R; r++) mv[r] = _mm512_setzero_ps();
  for (int64_t s = s0; s < s1; s++) {
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      const uint8_t* p = row0 + r * row_bytes + 2 * s * L::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(p + pf), _MM_HINT_T0);
      if (2 * L::kBytes > 64) _mm_prefetch(reinterpret_cast<const char*>(p + pf + 64), _MM_HINT_T0);
      L::template load<true>(p, &wq[r], &dw[r], &mv[r]);
    }
    step<L, R, T>(a, wq, dw, mv, xq + s * xs);
  }
  if (lone) {
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      L::template load<false>(row0 + r * row_bytes + 2 * s1 * L::kBytes, &wq[r], &dw[r], &mv[r]);
    }
    step<L, R, T>(a, wq, dw, mv, xq + s1 * xs);
  }
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    SPECLAB_UNROLL for (int t = 0; t < T; t++)
        _mm512_store_ps(acc + r * kAccStride + 16 * t, a[r][t]);
  }
}

using TileFn = void (*)(const uint8_t*, size_t, const uint8_t*, int64_t, int64_t, int64_t, bool,
                        bool, float*, int64_t);
template <class L, int R, size_t... T>
constexpr std::array<TileFn, sizeof...(T)> tiles(std::index_sequence<T...>) {
  return {tile<L, R, static_cast<int>(T) + 1>...};
}

// Column segments as on the FP32-activation path (core/matmul_avx512.cpp): the packed
// activations of one segment for up to 8 tokens (192 bytes per 64 values and token) stay within
// kSegActBytes of L1, a row's weights of a segment within kSegRowBytes, and the segments of a
// row are of about equal length; every step prefetches its row's weights one segment ahead (from
// the last segment: the next work item's first).
constexpr int64_t kSegActBytes = 16 << 10;
constexpr int64_t kSegRowBytes = 1024;

int64_t segment_steps(int64_t k, size_t bytes_per_step, int64_t n_steps) {
  const int64_t by_act = kSegActBytes / (kRecordBytes * k);
  const int64_t by_row = kSegRowBytes / static_cast<int64_t>(bytes_per_step);
  const int64_t max_steps = std::max<int64_t>(1, std::min(by_act, by_row));
  const int64_t n_seg = std::max<int64_t>(1, (n_steps + max_steps - 1) / max_steps);
  return std::max<int64_t>(1, (n_steps + n_seg - 1) / n_seg);
}

// A work item (n_rows <= kMaxRows): per pass of up to 8 tokens, segment by segment, every row
// tile (4 rows, then single rows) with token groups [0, 4) and [4, k) while the segment's
// weights are in L1; then the fixed horizontal sums.
template <class L>
SPECLAB_VNNI void rows_vnni(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                            int n_rows, const uint8_t* xq, int64_t xs, int64_t n_in,
                            int64_t n_tokens) {
  static constexpr auto k4 = tiles<L, 4>(std::make_index_sequence<4>());
  static constexpr auto k1 = tiles<L, 1>(std::make_index_sequence<4>());
  alignas(64) float acc[kMaxRows * kAccStride];
  const int64_t n_blocks = n_in / kQuantBlock, n_full = n_blocks / 2;
  const bool odd = n_blocks % 2 != 0;
  const auto offset = [](int64_t s) { return static_cast<int64_t>(2 * s * L::kBytes); };
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
    const int k = static_cast<int>(std::min<int64_t>(kMaxTokens, n_tokens - t0));
    const uint8_t* xt = xq + t0 * kRecordBytes;
    const int64_t seg = segment_steps(k, 2 * L::kBytes, n_full);
    for (int64_t s0 = 0;; s0 += seg) {
      const int64_t s1 = std::min(n_full, s0 + seg);
      const bool last = s1 == n_full;
      const int64_t pf =
          last ? static_cast<int64_t>(kMaxRows * row_bytes) - offset(s0) : offset(s1) - offset(s0);
      for (int g0 = 0; g0 < k; g0 += 4) {
        const int gk = std::min(4, k - g0);
        const uint8_t* xg = xt + g0 * kRecordBytes;
        int r = 0;
        for (; r + 4 <= n_rows; r += 4) {
          k4[gk - 1](row0 + r * row_bytes, row_bytes, xg, xs, s0, s1, last && odd, s0 == 0,
                     acc + r * kAccStride + 16 * g0, pf);
        }
        for (; r < n_rows; r++) {
          k1[gk - 1](row0 + r * row_bytes, row_bytes, xg, xs, s0, s1, last && odd, s0 == 0,
                     acc + r * kAccStride + 16 * g0, pf);
        }
      }
      if (last) break;
    }
    for (int r = 0; r < n_rows; r++) {
      for (int t = 0; t < k; t++) {
        out[(t0 + t) * n_out + r] = hsum(_mm512_load_ps(acc + r * kAccStride + 16 * t));
      }
    }
  }
}

// Quantizes 32 values as act_quantize_block (core/matmul_int8.cpp) does, bit for bit: the
// same amax (max is exact), the same scalar dx and 1 / dx, the same FP32 products, rounded to
// nearest even by vcvtps2dq (the default rounding mode, as nearbyint), clamped to +-127.
// q: 32 bytes. Returns dx.
SPECLAB_VNNI inline float quantize_block(const float* x, int8_t* q) {
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i lim = _mm512_set1_epi32(127), neg = _mm512_set1_epi32(-127);
  __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, id));
  __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, id));
  qa = _mm512_max_epi32(_mm512_min_epi32(qa, lim), neg);
  qb = _mm512_max_epi32(_mm512_min_epi32(qb, lim), neg);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(qa));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(qb));
  return d;
}

// One record (see the header) from the step's values x (64, or 32 for a lone last block).
SPECLAB_VNNI inline void pack_record(uint8_t* rec, const float* x, bool two, DType weights) {
  alignas(64) int8_t q[64] = {0};
  const float d0 = quantize_block(x, q);
  const float d1 = two ? quantize_block(x + 32, q + 32) : 0.0f;
  const __m512i qv = _mm512_load_si512(q);
  _mm512_storeu_si512(rec, qv);
  _mm512_storeu_ps(reinterpret_cast<float*>(rec + 64), two_scales(d0, d1));
  // Per-lane sums of 4 signed bytes: vpdpbusd with unsigned ones.
  const __m512i lane_sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), qv);
  __m512i aux;
  if (weights == DType::Q4_1) {
    const float s0 = static_cast<float>(_mm512_mask_reduce_add_epi32(0x00FF, lane_sum));
    const float s1 = static_cast<float>(_mm512_mask_reduce_add_epi32(0xFF00, lane_sum));
    aux = _mm512_castps_si512(two_scales(d0 * s0 * 0.125f, d1 * s1 * 0.125f));
  } else {
    const int shift = weights == DType::Q8_0 ? 7 : 3;  // the offsets 128 and 8
    aux = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane_sum, shift));
  }
  _mm512_storeu_si512(rec + 128, aux);
}

}  // namespace

SPECLAB_VNNI void pack(uint8_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk,
                       int64_t s0, int64_t s1, DType weights) {
  const int64_t n_steps = (n_in + kStepValues - 1) / kStepValues;
  for (int64_t t = 0; t < n_tokens; t++) {
    const int64_t c = t / chunk, n_c = std::min(chunk, n_tokens - c * chunk);
    uint8_t* base = dst + (c * n_steps * chunk + (t - c * chunk)) * kRecordBytes;
    for (int64_t s = s0; s < s1; s++) {
      const int64_t i0 = s * kStepValues;
      pack_record(base + s * n_c * kRecordBytes, x + t * n_in + i0, i0 + kStepValues <= n_in,
                  weights);
    }
  }
}

RowsFn rows_fn(DType dtype) {
  switch (dtype) {
    case DType::Q8_0:
      return rows_vnni<LoadQ8_0>;
    case DType::Q4_0:
      return rows_vnni<LoadQ4<false>>;
    case DType::Q4_1:
      return rows_vnni<LoadQ4<true>>;
    default:
      return nullptr;
  }
}

}  // namespace matmul_vnni
}  // namespace speclab
