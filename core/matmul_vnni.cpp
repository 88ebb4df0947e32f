// AVX-512 VNNI kernels: Q8_0 / Q4_0 / Q4_1 weights times int8 activations (vpdpbusd), and the
// k-quants Q4_K / Q6_K (vpmaddubsw + vpmaddwd: integer scales inside the integer sums).
//
// vpdpbusd multiplies unsigned bytes by signed bytes and adds each group of 4 products into a
// 32-bit lane. The activations are the signed side; the weights are made unsigned: Q4 nibbles
// already are (0..15); Q8_0 values give their |w| and move their signs to the activations (a
// masked negate per row and token, so its records need no offset term and take 128 bytes). The
// Q4_0 offset this adds, 8 times the lane's 4 activations, is precomputed per lane when the
// activations are packed and is the accumulator vpdpbusd starts from, so every lane holds the
// exact integer sum of its 4 products w_j * q_j with the format's signed w_j (Q4_0: nibble - 8).
// Q4_1 has no offset; its minimum m contributes m * dx * sum(q), a second FMA against a per-lane
// precomputed term.
//
// One 64-byte vector is two blocks (lanes 0..7: block 2s, 8..15: block 2s + 1). Per step the
// 16 integer lanes are converted to FP32 and multiplied by dw * dx of their block into one
// 16-lane FP32 accumulator per (row, token); at the end a fixed tree sums the 16 lanes.
//
// K-quants (Q4_K, Q6_K) read one activation record per 256-value super-block (the header's
// layout): the super-block is the activation block, with one dx (llama.cpp's q8_K). Their
// sub-block scales are small integers (6-bit sc_j, 8-bit Q6_K scales) under one FP16 factor d
// per super-block, so the scales are applied inside the integer sums: vpmaddubsw multiplies the
// unsigned codes by the int8 activations and adds pairs (16-bit; at most 2 * 63 * 127),
// vpmaddwd multiplies those by the 16-bit scales and adds pairs (32-bit, exact), and vpdpwssd does
// the same for the next vectors while adding them: the super-block's 4 vectors (64 values each)
// summed in 32-bit lanes. The minimums (Q4_K) and the offset 32 (Q6_K) are integer too: vpmaddwd
// of the record's 16 sums of 16 q with the 16-bit minimums or scales. Per super-block, row and
// token that is one convert, a multiply and an FMA (Q4_K: two converts, a multiply, two FMAs);
// per 64 weights and token, 2 integer operations, where the step-record kernels above take a
// dot, a convert, a multiply and an FMA per 64 weights.
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

#include "core/kquant_avx512.h"
#include "core/segment_prefetch.h"

namespace speclab {
namespace matmul_vnni {
namespace {

#define SPECLAB_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))
#define SPECLAB_UNROLL _Pragma("GCC unroll 16")
// A k-quant record's work inlined into its tile: GCC 12 kept it a call per super-block (the
// accumulators passed through memory, a vzeroupper per call).
#define SPECLAB_VNNI_INLINE SPECLAB_VNNI __attribute__((always_inline))

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
// is zero, as are its activations and scales). Out: wq the 64 bytes in element order (unsigned
// for Q4_0 / Q4_1; Q8_0: signed, kSigned), dw the blocks' scales as two_scales, mv (Q4_1) the
// minimums likewise.
struct LoadQ8_0 {  // {fp16 d; int8 qs[32]}
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static constexpr size_t kUnitBytes = 2 * kBytes;  // the weights of one record
  static constexpr int64_t kRecord = kQ8RecordBytes;
  static constexpr bool kSuperBlocks = false;
  static constexpr int kTileRows = 4;
  static constexpr int kLines = 2;  // cache lines to prefetch per record (68 bytes)
  static constexpr bool kHasMin = false;
  static constexpr bool kSigned = true;  // step moves the signs to the activations
  template <bool kTwo>
  SPECLAB_VNNI static inline void load(const uint8_t* p, __m512i* wq, __m512* dw, __m512*) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i hi = kTwo ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kBytes + 2))
                            : _mm256_setzero_si256();  // 0 (times q = 0)
    *wq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    *dw = two_scales(half_at(p), kTwo ? half_at(p + kBytes) : 0.0f);
  }
};

template <bool kMin>
struct LoadQ4 {  // Q4_0 {fp16 d; uint8 qs[16]}, Q4_1 {fp16 d; fp16 m; uint8 qs[16]}
  static constexpr size_t kBytes = kMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  static constexpr size_t kUnitBytes = 2 * kBytes;
  static constexpr int64_t kRecord = kRecordBytes;
  static constexpr bool kSuperBlocks = false;
  static constexpr int kTileRows = 4;
  static constexpr int kLines = 1;  // 36 or 40 bytes
  static constexpr size_t kQs = kMin ? 4 : 2;
  static constexpr bool kHasMin = kMin;
  static constexpr bool kSigned = false;
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

// The part of a k-quant super-block that does not depend on the format: for each row r and
// token t, isum[r][t] = sum over the super-block's 4 vectors v (64 values each) of
// scales_v . codes w[r][v] . q_v, lane by lane in 32-bit integers: vpmaddubsw (codes times the
// record's int8 values, pairs added in 16 bits), vpmaddwd for the first vector and vpdpwssd for
// the others (times the 16-bit scales, pairs added in 32 bits, then into the sum). A lane holds at
// most 4 * 4 * 63 * 127 * 128 < 2^24 in magnitude, so it converts to FP32 exactly. Vector v's
// scales are picked out of the row's scale16 with vpermw by pick[v], per vector, so that a tile
// keeps R of them live, not 4R.
template <int R, int T>
SPECLAB_VNNI_INLINE inline void super_block_sums(__m512i (&isum)[R][T], const __m512i (&w)[R][4],
                                                 const __m512i (&scale16)[R],
                                                 const __m512i (&pick)[4], const uint8_t* rec) {
  SPECLAB_UNROLL for (int v = 0; v < 4; v++) {
    __m512i sc[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) sc[r] =
        _mm512_permutexvar_epi16(pick[v], scale16[r]);
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const __m512i xq = _mm512_loadu_si512(rec + t * kSuperRecordBytes + 64 * v);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) {
        const __m512i p16 = _mm512_maddubs_epi16(w[r][v], xq);
        isum[r][t] =
            v == 0 ? _mm512_madd_epi16(p16, sc[r]) : _mm512_dpwssd_epi32(isum[r][t], p16, sc[r]);
      }
    }
  }
}

// A token's record: its 16 sums of 16 q (column order) and its dx, broadcast.
SPECLAB_VNNI inline __m256i record_sums(const uint8_t* rec) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kSuperRecordSums));
}
SPECLAB_VNNI inline __m512 record_scale(const uint8_t* rec) {
  float dx;
  std::memcpy(&dx, rec + kSuperRecordScale, 4);
  return _mm512_set1_ps(dx);
}

// Rows per register tile of the k-quant kernels: a tile holds its rows' 4 code vectors and its
// rows x tokens sums and accumulators.
constexpr int kKQuantTileRows = 2;

// K-quant loaders: one super-block of each row against one record per token (kSuperRecordBytes,
// the layout in the header). record<R, T>(acc, p, rec): acc[r][t] += the super-block at p[r]
// against token t's record at rec + t * kSuperRecordBytes.
//
// Q4_K: the 128 bytes of qs as two 64-byte vectors; the low nibbles of the first are sub-blocks
// 0 and 2 (bytes 0..31 and 32..63), its high nibbles 1 and 3, and likewise 4 / 6 and 5 / 7 for
// the second: the order record_block gives, in which the packing lays out the activations. The 16
// six-bit numbers [sc_0..7, m_0..7] are decoded once per super-block (q4_k_scale_min_bytes, as
// on the FP32-activation path) into 16-bit lanes; each vector picks its two scales with vpermw.
// A super-block contributes dx * (d * sum_v (sc . codes . q)_v - dmin * sum_j m_j S_j), S_j the
// sum of block j's q: m_j S_j by vpmaddwd of the record's 16 sums of 16 with [m_0, m_0, m_1, ...].
struct LoadQ4_K {
  static constexpr size_t kUnitBytes = sizeof(BlockQ4_K);
  static constexpr int64_t kRecord = kSuperRecordBytes;
  static constexpr bool kSuperBlocks = true;
  static constexpr int kTileRows = kKQuantTileRows;
  static constexpr int kLines = 3;  // 144 bytes a unit
  template <int R, int T>
  SPECLAB_VNNI_INLINE static inline void record(__m512 (&acc)[R][T], const uint8_t* const (&p)[R],
                                                const uint8_t* rec) {
    __m512i w[R][4], scale16[R];
    __m256i min16[R];
    __m512 d[R], neg_dmin[R];
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m256i min_pairs =
        _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      const BlockQ4_K* b = reinterpret_cast<const BlockQ4_K*>(p[r]);
      const __m256i s16 = _mm256_cvtepu8_epi16(q4_k_scale_min_bytes(b));  // [sc_0..7, m_0..7]
      scale16[r] = _mm512_castsi256_si512(s16);
      min16[r] = _mm256_permutexvar_epi16(min_pairs, s16);  // [m_0, m_0, m_1, m_1, ..., m_7, m_7]
      d[r] = _mm512_set1_ps(_cvtsh_ss(b->d));
      neg_dmin[r] = _mm512_set1_ps(-_cvtsh_ss(b->dmin));
      const __m512i q0 = _mm512_loadu_si512(b->qs), q1 = _mm512_loadu_si512(b->qs + 64);
      w[r][0] = _mm512_and_si512(q0, low4);
      w[r][1] = _mm512_and_si512(_mm512_srli_epi16(q0, 4), low4);
      w[r][2] = _mm512_and_si512(q1, low4);
      w[r][3] = _mm512_and_si512(_mm512_srli_epi16(q1, 4), low4);
    }
    // Vector v's 16-bit lanes 0..15 take the scale of its first sub-block, 16..31 its second.
    const __m512i pick[4] = {
        _mm512_setr_epi64(0, 0, 0, 0, 0x0002000200020002, 0x0002000200020002, 0x0002000200020002,
                          0x0002000200020002),
        _mm512_setr_epi64(0x0001000100010001, 0x0001000100010001, 0x0001000100010001,
                          0x0001000100010001, 0x0003000300030003, 0x0003000300030003,
                          0x0003000300030003, 0x0003000300030003),
        _mm512_setr_epi64(0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                          0x0004000400040004, 0x0006000600060006, 0x0006000600060006,
                          0x0006000600060006, 0x0006000600060006),
        _mm512_setr_epi64(0x0005000500050005, 0x0005000500050005, 0x0005000500050005,
                          0x0005000500050005, 0x0007000700070007, 0x0007000700070007,
                          0x0007000700070007, 0x0007000700070007)};
    __m512i isum[R][T];
    super_block_sums<R, T>(isum, w, scale16, pick, rec);
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const uint8_t* x = rec + t * kSuperRecordBytes;
      const __m256i s16 = record_sums(x);
      const __m512 dx = record_scale(x);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) {
        const __m256 ms = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16, min16[r]));  // m_j S_j
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r][t]), d[r]);
        f = _mm512_fmadd_ps(_mm512_zextps256_ps512(ms), neg_dmin[r], f);
        acc[r][t] = _mm512_fmadd_ps(f, dx, acc[r][t]);
      }
    }
  }
};

// Q6_K: step g (values 64g..64g + 63) holds groups 2g' and 2g' + 1 of half n = g / 2 (g' =
// g % 2): 64 codes whose low 4 bits are the 64 bytes ql[64n, 64n + 64) (low nibbles for g' = 0,
// high for 1) and whose high 2 bits are bits 2(2g'), 2(2g') + 1 of qh[32n + l] for the first 32
// and the next two bits for the other 32 (the layout the FP32-activation path's LoadQ6_K
// reads). The codes q (0..63) are the unsigned side; the activations are in column order. A
// 16-bit lane k of step g covers values 2k, 2k + 1, whose scale is scales[4g + k / 8]. The
// offset: sum_e sc_e sum (q - 32) x = sum_e sc_e sum q x - 32 sum_e sc_e S16_e, the last by
// vpmaddwd of the record's 16 sums S16 with the 16 scales, subtracted in integers; the
// super-block's exact integer sum is then rounded once to FP32 and times d and dx.
struct LoadQ6_K {
  static constexpr size_t kUnitBytes = sizeof(BlockQ6_K);
  static constexpr int64_t kRecord = kSuperRecordBytes;
  static constexpr bool kSuperBlocks = true;
  static constexpr int kTileRows = kKQuantTileRows;
  static constexpr int kLines = 4;  // 210 bytes a unit
  template <int R, int T>
  SPECLAB_VNNI_INLINE static inline void record(__m512 (&acc)[R][T], const uint8_t* const (&p)[R],
                                                const uint8_t* rec) {
    __m512i w[R][4], scale16[R];
    __m512 d[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(p[r]);
      const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
      scale16[r] = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s8));
      d[r] = _mm512_set1_ps(_cvtsh_ss(b->d));
      SPECLAB_UNROLL for (int n = 0; n < 2; n++) q6_k_codes(b, n, &w[r][2 * n], &w[r][2 * n + 1]);
    }
    // 16-bit lane k of vector g: scales[4g + k / 8].
    __m512i pick[4];
    SPECLAB_UNROLL for (int g = 0; g < 4; g++) {
      pick[g] = _mm512_add_epi16(
          _mm512_setr_epi64(0, 0, 0x0001000100010001, 0x0001000100010001, 0x0002000200020002,
                            0x0002000200020002, 0x0003000300030003, 0x0003000300030003),
          _mm512_set1_epi16(static_cast<int16_t>(4 * g)));
    }
    __m512i isum[R][T];
    super_block_sums<R, T>(isum, w, scale16, pick, rec);
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const uint8_t* x = rec + t * kSuperRecordBytes;
      const __m256i s16 = record_sums(x);
      const __m512 dx = record_scale(x);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) {
        const __m256i offset = _mm256_madd_epi16(s16, _mm512_castsi512_si256(scale16[r]));
        const __m512i total =
            _mm512_sub_epi32(isum[r][t], _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 5)));
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(total), d[r]), dx, acc[r][t]);
      }
    }
  }
};

// acc[r][t] += one step (64 values) of rows r against tokens t. rec: the step's records.
// Signed weights (Q8_0): vpdpbusd takes |w| as the unsigned side and the activations negated
// where w < 0 (a masked byte subtraction from zero), so each product is w_j * q_j exactly (|w|
// of -128 is 128 as an unsigned byte; |q| <= 127, so the negation cannot overflow).
template <class L, int R, int T>
SPECLAB_VNNI inline void step(__m512 (&acc)[R][T], const __m512i (&wq)[R], const __m512 (&dw)[R],
                              const __m512 (&mv)[R], const uint8_t* rec) {
  __m512i wu[R];  // the unsigned side
  __mmask64 neg[R] = {};
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    if constexpr (L::kSigned) {
      neg[r] = _mm512_movepi8_mask(wq[r]);
      wu[r] = _mm512_abs_epi8(wq[r]);
    } else {
      wu[r] = wq[r];
    }
  }
  SPECLAB_UNROLL for (int t = 0; t < T; t++) {
    const uint8_t* x = rec + t * L::kRecord;
    const __m512i xq = _mm512_loadu_si512(x);
    const __m512 dx = _mm512_loadu_ps(reinterpret_cast<const float*>(x + 64));
    const __m512i aux_i = L::kSigned ? _mm512_setzero_si512() : _mm512_loadu_si512(x + 128);
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      const __m512i xs =
          L::kSigned ? _mm512_mask_sub_epi8(xq, neg[r], _mm512_setzero_si512(), xq) : xq;
      const __m512i p = _mm512_dpbusd_epi32(L::kHasMin ? _mm512_setzero_si512() : aux_i, wu[r], xs);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw[r], dx), acc[r][t]);
      if (L::kHasMin) acc[r][t] = _mm512_fmadd_ps(mv[r], _mm512_castsi512_ps(aux_i), acc[r][t]);
    }
  }
}

// Accumulators of a work item between segments: row j, token t at acc[j * kAccStride + 16 t].
constexpr int kMaxRows = 12;  // rows per work item (matmul_avx512::kRowBlock)
constexpr int kMaxTokens = 8;
constexpr int kAccStride = kMaxTokens * 16;

// A register tile of R rows x T tokens over the records [s0, s1) of one column segment (64-value
// steps, or k-quant super-blocks), plus the lone last block of a row with an odd block count (at
// step s1) when lone. first: start from zero, else from acc; the accumulators are parked in acc
// afterwards (exactly: a store and a reload change no bit). pf: prefetch distance in bytes;
// kPrefetch: into L1, into L2 or none (core/segment_prefetch.h).
template <class L, int R, int T, TilePrefetch kPrefetch>
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
    const uint8_t* p[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      p[r] = row0 + r * row_bytes + s * L::kUnitBytes;
      SPECLAB_UNROLL for (int l = 0; l < L::kLines; l++) {
        prefetch_line<kPrefetch>(p[r] + pf + 64 * l);  // (kNone: nothing)
      }
    }
    if constexpr (L::kSuperBlocks) {
      L::template record<R, T>(a, p, xq + s * xs);
    } else {
      SPECLAB_UNROLL for (int r = 0; r < R; r++) {
        L::template load<true>(p[r], &wq[r], &dw[r], &mv[r]);
      }
      step<L, R, T>(a, wq, dw, mv, xq + s * xs);
    }
  }
  if constexpr (!L::kSuperBlocks) {
    if (lone) {
      SPECLAB_UNROLL for (int r = 0; r < R; r++) {
        L::template load<false>(row0 + r * row_bytes + s1 * L::kUnitBytes, &wq[r], &dw[r], &mv[r]);
      }
      step<L, R, T>(a, wq, dw, mv, xq + s1 * xs);
    }
  }
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    SPECLAB_UNROLL for (int t = 0; t < T; t++)
        _mm512_store_ps(acc + r * kAccStride + 16 * t, a[r][t]);
  }
}

using TileFn = void (*)(const uint8_t*, size_t, const uint8_t*, int64_t, int64_t, int64_t, bool,
                        bool, float*, int64_t);
template <class L, int R, TilePrefetch kPrefetch, size_t... T>
constexpr std::array<TileFn, sizeof...(T)> tiles(std::index_sequence<T...>) {
  return {tile<L, R, static_cast<int>(T) + 1, kPrefetch>...};
}

// A call of n_tokens (1..kWholeRowTokens), each row of the item read whole with no software
// prefetch, one row at a time (as the FP32-activation path does on Zen 4 for one token,
// core/matmul_avx512.cpp: a thread's weights are then one sequential stream, which the hardware
// prefetcher follows on its own), against the row's records of every token. The same chains of
// integer sums and FMAs as the segmented tiles, so the same bits. Measured on a Zen 4 guest, one
// core streaming [8192, 3072] matrices, one token: Q4_K 0.76 ms against 1.55 in prefetched
// segments, Q6_K 0.91 against 2.1-2.3, Q8_0 0.95-1.0 against 1.85, Q4_1 1.25-1.36 against
// 1.42-1.53; with 4-row tiles over whole rows 2.0-2.4 ms (several streams per thread defeat the
// prefetcher). A row's records must fit in L1 beside the streaming weights: with 18 KB of them
// (8192 columns of the earlier 576-byte k-quant records) two threads read Q4_K at 60% of the
// rate of shorter rows. Calls of more tokens read whole rows while the records of a row for all
// of them take at most kWholeRowRecordBytes (rows_vnni): two threads, [8192, 3072], 2 tokens,
// Q4_K 509 us against 838-869 in segments, Q6_K 601-827 against 1120-1268, Q8_0 801-904 against
// 989-1068; 4 tokens Q6_K 894-923 against 1349-1467, Q4_K 809-1046 against 884-915, and Q8_0
// (24 KB of records) 1790-1882 against 1228-1323, so past 16 KB the segments stay.
constexpr int kWholeRowTokens = 4;
constexpr int64_t kWholeRowRecordBytes = 16 << 10;

template <class L>
SPECLAB_VNNI void rows_whole(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                             int n_rows, const uint8_t* xq, int64_t xs, int64_t n_records,
                             bool lone, int n_tokens) {
  static constexpr auto kw =
      tiles<L, 1, TilePrefetch::kNone>(std::make_index_sequence<kWholeRowTokens>());
  alignas(64) float acc[kMaxRows * kAccStride];
  for (int r = 0; r < n_rows; r++) {
    kw[n_tokens - 1](row0 + r * row_bytes, row_bytes, xq, xs, 0, n_records, lone, true,
                     acc + r * kAccStride, 0);
  }
  for (int r = 0; r < n_rows; r++) {
    for (int t = 0; t < n_tokens; t++) {
      out[t * n_out + r] = hsum(_mm512_load_ps(acc + r * kAccStride + 16 * t));
    }
  }
}

// Column segments as on the FP32-activation path (core/matmul_avx512.cpp): the packed
// activations of one segment for up to 8 tokens (128 or 192 bytes per 64 values and token, 320
// per 256 for k-quants) stay within kSegActBytes of L1, a row's weights of a segment within
// kSegRowBytes, and the segments of a row are of about equal length; every step prefetches its
// row's weights one segment ahead (from the last segment: the next work item's first), into L1
// or, on Zen 4, into L2 (core/segment_prefetch.h: there [8192, 3072] Q8_0 at 4 tokens took
// 1.25-1.30 ms with the L1 target, 1.06 with L2; Q4_1 at 2 tokens 0.90 and 0.77-0.78).
constexpr int64_t kSegActBytes = 16 << 10;
constexpr int64_t kSegRowBytes = 1024;

int64_t segment_steps(int64_t k, int64_t record_bytes, size_t bytes_per_step, int64_t n_steps) {
  const int64_t by_act = kSegActBytes / (record_bytes * k);
  const int64_t by_row = kSegRowBytes / static_cast<int64_t>(bytes_per_step);
  const int64_t max_steps = std::max<int64_t>(1, std::min(by_act, by_row));
  const int64_t n_seg = std::max<int64_t>(1, (n_steps + max_steps - 1) / max_steps);
  return std::max<int64_t>(1, (n_steps + n_seg - 1) / n_seg);
}

// A work item (n_rows <= kMaxRows): per pass of up to 8 tokens, segment by segment, every row
// tile (L::kTileRows rows, then single rows) with token groups [0, 4) and [4, k) while the
// segment's weights are in L1; then the fixed horizontal sums.
template <class L, bool kWholeRows, SegmentPrefetch kTo>
SPECLAB_VNNI void rows_vnni(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                            int n_rows, const uint8_t* xq, int64_t xs, int64_t n_in,
                            int64_t n_tokens) {
  static constexpr auto kr =
      tiles<L, L::kTileRows, tile_prefetch(kTo)>(std::make_index_sequence<4>());
  static constexpr auto k1 = tiles<L, 1, tile_prefetch(kTo)>(std::make_index_sequence<4>());
  alignas(64) float acc[kMaxRows * kAccStride];
  // Records: 64-value steps (the last one possibly a lone block) or k-quant super-blocks.
  const int64_t n_blocks = n_in / kQuantBlock;
  const int64_t n_full = L::kSuperBlocks ? n_in / kSuperBlock : n_blocks / 2;
  const bool odd = !L::kSuperBlocks && n_blocks % 2 != 0;
  const int64_t row_records = (n_full + (odd ? 1 : 0)) * L::kRecord;  // bytes, one token
  if (kWholeRows && (n_tokens == 1 || (n_tokens <= kWholeRowTokens &&
                                       n_tokens * row_records <= kWholeRowRecordBytes))) {
    rows_whole<L>(out, n_out, row0, row_bytes, n_rows, xq, xs, n_full, odd,
                  static_cast<int>(n_tokens));
    return;
  }
  const auto offset = [](int64_t s) { return static_cast<int64_t>(s * L::kUnitBytes); };
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
    const int k = static_cast<int>(std::min<int64_t>(kMaxTokens, n_tokens - t0));
    const uint8_t* xt = xq + t0 * L::kRecord;
    const int64_t seg = segment_steps(k, L::kRecord, L::kUnitBytes, n_full);
    for (int64_t s0 = 0;; s0 += seg) {
      const int64_t s1 = std::min(n_full, s0 + seg);
      const bool last = s1 == n_full;
      const int64_t pf =
          last ? static_cast<int64_t>(kMaxRows * row_bytes) - offset(s0) : offset(s1) - offset(s0);
      for (int g0 = 0; g0 < k; g0 += 4) {
        const int gk = std::min(4, k - g0);
        const uint8_t* xg = xt + g0 * L::kRecord;
        int r = 0;
        for (; r + L::kTileRows <= n_rows; r += L::kTileRows) {
          kr[gk - 1](row0 + r * row_bytes, row_bytes, xg, xs, s0, s1, last && odd, s0 == 0,
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

// Quantizes n values (a multiple of 16) as act_quantize_block (core/matmul_int8.cpp) does, bit
// for bit: the same amax (max is exact), the same scalar dx and 1 / dx, the same FP32 products,
// rounded to nearest even by vcvtps2dq (the default rounding mode, as nearbyint), clamped to
// +-127. q: n bytes. Returns dx.
SPECLAB_VNNI inline float quantize_values(const float* x, int n, int8_t* q) {
  __m512 m = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  const float d = _mm512_reduce_max_ps(m) / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i lim = _mm512_set1_epi32(127), neg = _mm512_set1_epi32(-127);
  for (int i = 0; i < n; i += 16) {
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), id));
    v = _mm512_max_epi32(_mm512_min_epi32(v, lim), neg);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v));
  }
  return d;
}

// One record (see the header) from the step's values x (64, or 32 for a lone last block).
SPECLAB_VNNI inline void pack_record(uint8_t* rec, const float* x, bool two, DType weights) {
  alignas(64) int8_t q[64] = {0};
  const float d0 = quantize_values(x, 32, q);
  const float d1 = two ? quantize_values(x + 32, 32, q + 32) : 0.0f;
  const __m512i qv = _mm512_load_si512(q);
  _mm512_storeu_si512(rec, qv);
  _mm512_storeu_ps(reinterpret_cast<float*>(rec + 64), two_scales(d0, d1));
  if (weights == DType::Q8_0) return;  // no offset: the kernel moves the weights' signs
  // Per-lane sums of 4 signed bytes: vpdpbusd with unsigned ones.
  const __m512i lane_sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), qv);
  __m512i aux;
  if (weights == DType::Q4_1) {
    const float s0 = static_cast<float>(_mm512_mask_reduce_add_epi32(0x00FF, lane_sum));
    const float s1 = static_cast<float>(_mm512_mask_reduce_add_epi32(0xFF00, lane_sum));
    aux = _mm512_castps_si512(two_scales(d0 * s0 * 0.125f, d1 * s1 * 0.125f));
  } else {
    aux = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane_sum, 3));  // 8 q
  }
  _mm512_storeu_si512(rec + 128, aux);
}

// Whether weights of this dtype read one record per super-block (the k-quants).
bool super_block_records(DType weights) { return dtype_block_size(weights) == kSuperBlock; }

// One k-quant record (the header's layout) from the super-block's 256 values x.
SPECLAB_VNNI inline void pack_super_record(uint8_t* rec, const float* x, DType weights) {
  alignas(64) int8_t q[kSuperBlock];
  const float dx = quantize_values(x, kSuperBlock, q);
  for (int p = 0; p < 8; p++) std::memcpy(rec + 32 * p, q + 32 * record_block(weights, p), 32);
  // Sums of 16 q: vpdpbusd with unsigned ones gives the sums of 4 per 32-bit lane.
  int16_t s16[16];
  for (int c = 0; c < 4; c++) {
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1),
                                                  _mm512_load_si512(q + 64 * c)));
    for (int i = 0; i < 4; i++) {
      s16[4 * c + i] = static_cast<int16_t>(lanes[4 * i] + lanes[4 * i + 1] + lanes[4 * i + 2] +
                                            lanes[4 * i + 3]);
    }
  }
  std::memcpy(rec + kSuperRecordSums, s16, sizeof s16);
  std::memcpy(rec + kSuperRecordScale, &dx, 4);
  std::memset(rec + kSuperRecordScale + 4, 0, kSuperRecordBytes - kSuperRecordScale - 4);
}

}  // namespace

int record_block(DType weights, int p) {
  static constexpr int kQ4K[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  return weights == DType::Q4_K ? kQ4K[p] : p;
}

int64_t record_values(DType weights) {
  return super_block_records(weights) ? kSuperBlock : kStepValues;
}

int64_t record_bytes(DType weights) {
  if (super_block_records(weights)) return kSuperRecordBytes;
  return weights == DType::Q8_0 ? kQ8RecordBytes : kRecordBytes;
}

int record_kind(DType weights) {
  switch (weights) {
    case DType::Q8_0:
      return 0;
    case DType::Q4_0:
      return 1;
    case DType::Q4_1:
      return 2;
    case DType::Q4_K:
      return 3;
    default:  // Q6_K
      return 4;
  }
}

SPECLAB_VNNI void pack(uint8_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk,
                       int64_t s0, int64_t s1, DType weights) {
  const int64_t values = record_values(weights), bytes = record_bytes(weights);
  const bool super = super_block_records(weights);
  const int64_t n_records = (n_in + values - 1) / values;
  for (int64_t t = 0; t < n_tokens; t++) {
    const int64_t c = t / chunk, n_c = std::min(chunk, n_tokens - c * chunk);
    uint8_t* base = dst + (c * n_records * chunk + (t - c * chunk)) * bytes;
    for (int64_t s = s0; s < s1; s++) {
      const int64_t i0 = s * values;
      if (super) {
        pack_super_record(base + s * n_c * bytes, x + t * n_in + i0, weights);
      } else {
        pack_record(base + s * n_c * bytes, x + t * n_in + i0, i0 + kStepValues <= n_in, weights);
      }
    }
  }
}

// kWholeRows: one token, and calls of a few whose records fit, as rows_whole.
template <bool kWholeRows, SegmentPrefetch kTo>
RowsFn rows_for(DType dtype) {
  switch (dtype) {
    case DType::Q8_0:
      return rows_vnni<LoadQ8_0, kWholeRows, kTo>;
    case DType::Q4_0:
      return rows_vnni<LoadQ4<false>, kWholeRows, kTo>;
    case DType::Q4_1:
      return rows_vnni<LoadQ4<true>, kWholeRows, kTo>;
    case DType::Q4_K:
      return rows_vnni<LoadQ4_K, kWholeRows, kTo>;
    case DType::Q6_K:
      return rows_vnni<LoadQ6_K, kWholeRows, kTo>;
    default:
      return nullptr;
  }
}

RowsFn rows_fn(DType dtype, bool whole_rows, SegmentPrefetch prefetch) {
  constexpr SegmentPrefetch kL1 = SegmentPrefetch::kToL1, kL2 = SegmentPrefetch::kToL2;
  if (whole_rows) return prefetch == kL2 ? rows_for<true, kL2>(dtype) : rows_for<true, kL1>(dtype);
  return prefetch == kL2 ? rows_for<false, kL2>(dtype) : rows_for<false, kL1>(dtype);
}

}  // namespace matmul_vnni
}  // namespace speclab
