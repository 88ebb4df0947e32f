#include "core/matmul_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace speclab {
namespace matmul_avx2 {
namespace {

// The instructions come from a target attribute on each function, not from -m flags on the
// file (docs/cpu-kernels.md says why): the build stays portable x86-64 and this path is chosen
// at run time.
#define SPECLAB_AVX2 __attribute__((target("avx2,fma,f16c")))

// Tokens per register tile (the rows per tile are at most 4): 4 x 3 = 12 accumulators, 3
// activation vectors and one weight vector fill the 16 ymm registers.
constexpr int kTileTokens = 3;
constexpr int kTileRows = 4;
// Up to this many tokens, rows_few_tokens (whole rows, activations as they are).
constexpr int64_t kFewTokens = 8;

// The fixed horizontal sum of the batch-invariant order (core/matmul_avx2.h).
SPECLAB_AVX2 inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);                     // 4 lanes
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));  // 2 lanes
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));    // 1 lane
  return _mm_cvtss_f32(lo);
}

// A register tile of R rows x T tokens over the n_vec columns (a multiple of 8) of one segment.
//   w: R pointers to the segment's FP32 weights;  x: the segment of token 0's activations,
//   token t at x + t * x_stride;  park: the tile's accumulators, row j token t at
//   park + j * park_row + t * 8 (8 floats), zero-initialized when `first`.
// Each 8-column slice of x is loaded once for the R rows and each slice of a row once for the
// T tokens; every accumulator takes its slices in column order whatever R and T are.
template <int R, int T>
SPECLAB_AVX2 void tile(const float* const* w, const float* x, int64_t x_stride, int64_t n_vec,
                       float* park, int64_t park_row, bool first) {
  __m256 acc[R][T];
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) {
      acc[r][t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(park + r * park_row + t * 8);
    }
  }
  for (int64_t i = 0; i < n_vec; i += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; t++) xv[t] = _mm256_loadu_ps(x + t * x_stride + i);
    for (int r = 0; r < R; r++) {
      const __m256 wv = _mm256_loadu_ps(w[r] + i);
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) _mm256_storeu_ps(park + r * park_row + t * 8, acc[r][t]);
  }
}

using TileFn = void (*)(const float* const*, const float*, int64_t, int64_t, float*, int64_t, bool);

// tile<R, T> for 1 <= R <= 4 and 1 <= T <= 3: the full tile and the remainders of an item's
// rows and a chunk's tokens.
constexpr TileFn kTiles[kTileRows][kTileTokens] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>},
    {tile<4, 1>, tile<4, 2>, tile<4, 3>},
};

// The tile above for BF16 weights read in place, whole rows, in 16-column steps of even and odd
// columns (core/matmul_avx2.h): one 32-byte load of a row's 16 BF16 weights gives the FP32
// weights of the even columns by a shift (a BF16 value is the high half of an FP32: exact) and
// those of the odd columns by a mask, where widening each 8-column slice would take a
// zero-extension and a shift; the activations are packed in the same order (pack). So a decode
// step reads every weight once from memory and never writes a converted copy, and the tiles of
// many tokens reread the rows as BF16 (half the bytes of a converted copy) at one integer
// operation per 8 weights. After the steps, one 8-column slice in column order when
// n_vec % 16 == 8.
//   w: R pointers to BF16 rows from column 0; x: token 0's activations in pack's order, token t
//   at x + t * x_stride; n_steps: the columns in whole 16-column steps; half: one 8-column slice
//   follows them; park, park_row: as tile<R, T> (the accumulators start at zero).
template <int R, int T>
SPECLAB_AVX2 void tile_bf16(const uint16_t* const* w, const float* x, int64_t x_stride,
                            int64_t n_steps, bool half, float* park, int64_t park_row) {
  __m256 acc[R][T];
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
  }
  const __m256 odd = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0xffff0000u)));
  for (int64_t i = 0; i < n_steps; i += 16) {
    __m256 xv[T];
    for (int t = 0; t < T; t++) xv[t] = _mm256_loadu_ps(x + t * x_stride + i);
    for (int r = 0; r < R; r++) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + i));
      const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
    for (int t = 0; t < T; t++) xv[t] = _mm256_loadu_ps(x + t * x_stride + i + 8);
    for (int r = 0; r < R; r++) {
      const __m256 raw = _mm256_loadu_ps(reinterpret_cast<const float*>(w[r] + i));
      const __m256 wv = _mm256_and_ps(raw, odd);
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (half) {
    __m256 xv[T];
    for (int t = 0; t < T; t++) xv[t] = _mm256_loadu_ps(x + t * x_stride + n_steps);
    for (int r = 0; r < R; r++) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r] + n_steps));
      const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; r++) {
    for (int t = 0; t < T; t++) _mm256_storeu_ps(park + r * park_row + t * 8, acc[r][t]);
  }
}

using TileBf16Fn = void (*)(const uint16_t* const*, const float*, int64_t, int64_t, bool, float*,
                            int64_t);

constexpr TileBf16Fn kTilesBf16[kTileRows][kTileTokens] = {
    {tile_bf16<1, 1>, tile_bf16<1, 2>, tile_bf16<1, 3>},
    {tile_bf16<2, 1>, tile_bf16<2, 2>, tile_bf16<2, 3>},
    {tile_bf16<3, 1>, tile_bf16<3, 2>, tile_bf16<3, 3>},
    {tile_bf16<4, 1>, tile_bf16<4, 2>, tile_bf16<4, 3>},
};

SPECLAB_AVX2 inline float fp16_scalar(uint16_t h) { return _cvtsh_ss(h); }

// 8 unsigned bytes -> 8 floats.
SPECLAB_AVX2 inline __m256 u8x8_to_ps(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

}  // namespace

SPECLAB_AVX2 void row_to_f32(float* dst, DType dtype, const void* src, int64_t n) {
  switch (dtype) {
    case DType::F32:
      dtype_to_f32(dtype, src, dst, n);
      return;
    case DType::Q4_K: {
      // Sub-block j: (d * sc_j) * q - dmin * m_j, q the low (even j) or high (odd j) nibbles of
      // 32 bytes of qs. d * sc_j (11 + 6 significant bits) times q (4) is exact in FP32, so
      // fms(d * sc_j, q, dmin * m_j), rounded once, is the reference's product-then-difference.
      const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
      const __m256i low4 = _mm256_set1_epi32(0x0f);
      for (int64_t blk = 0; blk < n / kSuperBlock; blk++) {
        const float d = fp16_scalar(b[blk].d), dmin = fp16_scalar(b[blk].dmin);
        for (int j = 0; j < 8; j++) {
          int sc, m;
          dtype_q4_k_scale_min(b[blk].scales, j, &sc, &m);
          const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc));
          const __m256 m1 = _mm256_set1_ps(dmin * static_cast<float>(m));
          const uint8_t* q = b[blk].qs + 32 * (j / 2);
          float* o = dst + blk * kSuperBlock + 32 * j;
          for (int l = 0; l < 32; l += 8) {
            __m256i v =
                _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + l)));
            v = j % 2 == 0 ? _mm256_and_si256(v, low4) : _mm256_srli_epi32(v, 4);
            _mm256_storeu_ps(o + l, _mm256_fmsub_ps(d1, _mm256_cvtepi32_ps(v), m1));
          }
        }
      }
      return;
    }
    case DType::Q6_K: {
      // Group g of half n: low 4 bits from 32 bytes of ql (low nibbles for g < 2, high for
      // g >= 2), high 2 bits from bits 2g, 2g + 1 of 32 bytes of qh; (d * scale) * (q - 32).
      const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
      const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
      const __m256i bias = _mm256_set1_epi8(32);
      for (int64_t blk = 0; blk < n / kSuperBlock; blk++) {
        const float d = fp16_scalar(b[blk].d);
        for (int nh = 0; nh < 2; nh++) {
          const __m256i qh =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[blk].qh + 32 * nh));
          for (int g = 0; g < 4; g++) {
            __m256i ql = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(b[blk].ql + 64 * nh + 32 * (g % 2)));
            if (g >= 2) ql = _mm256_srli_epi16(ql, 4);
            // (qh >> 2g) & 3, moved to bits 4..5: no bit crosses a byte once masked.
            const __m256i hi = _mm256_slli_epi16(
                _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), low2), 4);
            alignas(32) int8_t q[32];  // q - 32
            _mm256_store_si256(
                reinterpret_cast<__m256i*>(q),
                _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(ql, low4), hi), bias));
            const int e0 = 128 * nh + 32 * g;
            float* o = dst + blk * kSuperBlock + e0;
            for (int l = 0; l < 32; l += 8) {
              const __m256 f = _mm256_set1_ps(d * static_cast<float>(b[blk].scales[(e0 + l) / 16]));
              const __m256i v =
                  _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + l)));
              _mm256_storeu_ps(o + l, _mm256_mul_ps(f, _mm256_cvtepi32_ps(v)));
            }
          }
        }
      }
      return;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
      }
      for (; i < n; i++) dst[i] = fp16_scalar(s[i]);
      return;
    }
    case DType::BF16: {
      // A BF16 value is the high half of an FP32: widen and shift, exact.
      const uint16_t* s = static_cast<const uint16_t*>(src);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
      }
      for (; i < n; i++) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::Q8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t blk = 0; blk < n / kQuantBlock; blk++) {
        const __m256 d = _mm256_set1_ps(fp16_scalar(b[blk].d));
        float* o = dst + blk * kQuantBlock;
        for (int j = 0; j < 4; j++) {
          __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[blk].qs + 8 * j));
          __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
          _mm256_storeu_ps(o + 8 * j, _mm256_mul_ps(d, v));
        }
      }
      return;
    }
    case DType::Q4_0:
    case DType::Q4_1: {
      // Element j < 16 is the low nibble of qs[j], element j + 16 the high nibble.
      const bool has_min = dtype == DType::Q4_1;
      const size_t block_bytes = dtype_block_bytes(dtype);
      const uint8_t* base = static_cast<const uint8_t*>(src);
      const __m128i mask = _mm_set1_epi8(0x0f);
      const __m256 eight = _mm256_set1_ps(8.0f);
      for (int64_t blk = 0; blk < n / kQuantBlock; blk++) {
        const uint8_t* block = base + blk * block_bytes;
        uint16_t d_bits, m_bits = 0;
        std::memcpy(&d_bits, block, 2);
        if (has_min) std::memcpy(&m_bits, block + 2, 2);
        const uint8_t* qs = block + (has_min ? 4 : 2);
        const __m256 d = _mm256_set1_ps(fp16_scalar(d_bits));
        const __m256 m = _mm256_set1_ps(has_min ? fp16_scalar(m_bits) : 0.0f);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
        const __m128i lo = _mm_and_si128(packed, mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
        const __m256 q[4] = {u8x8_to_ps(lo), u8x8_to_ps(_mm_srli_si128(lo, 8)), u8x8_to_ps(hi),
                             u8x8_to_ps(_mm_srli_si128(hi, 8))};
        float* o = dst + blk * kQuantBlock;
        for (int j = 0; j < 4; j++) {
          // Q4_0: d * (q - 8); Q4_1: d * q + m (multiply, then add: as the reference rounds).
          __m256 v = has_min ? _mm256_add_ps(_mm256_mul_ps(d, q[j]), m)
                             : _mm256_mul_ps(d, _mm256_sub_ps(q[j], eight));
          _mm256_storeu_ps(o + 8 * j, v);
        }
      }
      return;
    }
  }
}

int64_t n_segments(int64_t n_in) { return (n_in + kSegment - 1) / kSegment; }

bool reads_even_odd(DType dtype) { return dtype == DType::BF16; }

bool packs_activations(int64_t n_tokens, DType dtype) {
  return n_tokens > kFewTokens || reads_even_odd(dtype);
}

size_t packed_floats(int64_t n_tokens, int64_t n_in) {
  return static_cast<size_t>(n_segments(n_in) * n_tokens * kSegment);
}

namespace {

// Columns [c0, c0 + len) of one token's activations x into dst, in the order tile_bf16 reads
// them when even_odd (c0 a multiple of 16): each whole 16-column step as its 8 even columns,
// then its 8 odd ones; the columns after the last whole step of the row (n16) in column order.
void copy_columns(float* dst, const float* x, int64_t c0, int64_t len, int64_t n16, bool even_odd) {
  if (!even_odd) {
    std::memcpy(dst, x + c0, len * sizeof(float));
    return;
  }
  const int64_t steps = std::max<int64_t>(0, std::min(c0 + len, n16) - c0);
  for (int64_t i = 0; i < steps; i += 16) {
    for (int l = 0; l < 8; l++) {
      dst[i + l] = x[c0 + i + 2 * l];
      dst[i + 8 + l] = x[c0 + i + 2 * l + 1];
    }
  }
  std::memcpy(dst + steps, x + c0 + steps, (len - steps) * sizeof(float));
}

}  // namespace

void pack(float* xp, const float* x, int64_t n_tokens, int64_t n_in, int64_t s_begin, int64_t s_end,
          DType dtype) {
  const bool even_odd = reads_even_odd(dtype);
  const bool segment_layout = n_tokens > kFewTokens && !even_odd;
  const int64_t n16 = n_in / 16 * 16;
  for (int64_t s = s_begin; s < s_end; s++) {
    const int64_t s0 = s * kSegment, len = std::min(kSegment, n_in - s0);
    for (int64_t t = 0; t < n_tokens; t++) {
      float* dst = segment_layout ? xp + (s * n_tokens + t) * kSegment : xp + t * n_in + s0;
      copy_columns(dst, x + t * n_in, s0, len, n16, even_odd);
    }
  }
}

namespace {

// Tokens of the next tile when `left` tokens remain: 3, but two tiles of 2 for the last 4, since
// a 4 x 1 tile's 4 accumulator chains cannot cover the FMA latency (4 cycles x 2 FMAs per
// cycle) where 4 x 2 has 8. Tile shapes change no output's arithmetic.
int64_t token_tile(int64_t left) { return left == 4 ? 2 : std::min<int64_t>(kTileTokens, left); }

// The end of the batch-invariant sum for rows j < n_rows and tokens t < n_tok: the fixed
// horizontal sum of the parked accumulators, then the tail columns [n_vec, n_in), fmaf in
// column order. w[j]: row j's FP32 weights from column s0 on (the segment holding the tail:
// segments start on multiples of 8); x: token 0's activations from column s0 on, token t at
// x + t * x_stride; park: row j token t at park + j * park_row + t * 8; out: token t, row j at
// out[t * n_out + j].
SPECLAB_AVX2 void finish(float* out, int64_t n_out, const float* const* w, int n_rows,
                         const float* x, int64_t x_stride, int64_t n_tok, const float* park,
                         int64_t park_row, int64_t s0, int64_t n_vec, int64_t n_in) {
  for (int64_t t = 0; t < n_tok; t++) {  // a token's outputs are adjacent in out
    for (int j = 0; j < n_rows; j++) {
      const float* xt = x + t * x_stride;
      float tail = 0.0f;
      for (int64_t i = n_vec; i < n_in; i++) tail = __builtin_fmaf(w[j][i - s0], xt[i - s0], tail);
      out[t * n_out + j] = hsum(_mm256_loadu_ps(park + j * park_row + t * 8)) + tail;
    }
  }
}

// BF16 weights, any number of tokens up to kTokenChunk: 4 rows at a time read whole and in
// place (tile_bf16) by each token tile in turn, the first reading them from memory, the others
// from L1 or L2, as BF16, where a converted copy would be twice the bytes (4 rows x n_in FP32,
// out of L1). Decoding and verification (up to kFewTokens tokens) leave the streaming to the
// hardware prefetcher, which streams rows read front to back best; for more tokens the next 4
// rows (of this item or, after its last, of the next item: n_next_rows) are prefetched into L2
// a few lines per token tile, so the next first tile finds them there. x: [n_tokens, n_in] in
// pack's even/odd order. The tail columns (n_in % 8) go through the FP32 finish from a converted
// copy of just those columns.
SPECLAB_AVX2 void rows_bf16(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                            int n_rows, int n_next_rows, const float* x, int64_t n_in,
                            int64_t n_tokens, float* park, float* buf) {
  const int64_t n_vec = n_in / 8 * 8;
  const int64_t n16 = n_in / 16 * 16;
  constexpr int64_t park_row = kTokenChunk * 8;
  const int64_t n_calls = (n_tokens + kTileTokens - 1) / kTileTokens;  // token tiles per 4 rows
  const float* tail[kTileRows];
  const uint16_t* wb[kTileRows];
  for (int j0 = 0; j0 < n_rows; j0 += kTileRows) {
    const int nr = std::min(kTileRows, n_rows - j0);
    for (int j = 0; j < nr; j++) {
      wb[j] = reinterpret_cast<const uint16_t*>(row0 + (j0 + j) * row_bytes);
      for (int64_t i = n_vec; i < n_in; i++) buf[j * 8 + (i - n_vec)] = bf16_to_f32(wb[j][i]);
      tail[j] = buf + j * 8;
    }
    // The next 4 rows follow these in memory, within the item or in the next one.
    const uint8_t* next = row0 + (j0 + nr) * row_bytes;
    const int64_t next_rows = std::min(kTileRows, n_rows - j0 - nr + n_next_rows);
    const int64_t n_lines =
        n_tokens > kFewTokens ? (next_rows * static_cast<int64_t>(row_bytes) + 63) / 64 : 0;
    const int64_t lines_per_call = (n_lines + n_calls - 1) / n_calls;
    int64_t line = 0;
    for (int64_t t = 0, nt = 0; t < n_tokens; t += nt) {
      nt = token_tile(n_tokens - t);
      for (int64_t i = 0; i < lines_per_call && line < n_lines; i++, line++) {
        _mm_prefetch(reinterpret_cast<const char*>(next + 64 * line), _MM_HINT_T1);
      }
      kTilesBf16[nr - 1][static_cast<int>(nt) - 1](wb, x + t * n_in, n_in, n16, n_vec > n16,
                                                   park + t * 8, park_row);
    }
    finish(out + j0, n_out, tail, nr, x + n_vec, n_in, n_tokens, park, park_row, n_vec, n_vec,
           n_in);
  }
}

// Up to kFewTokens tokens (decoding, verification): 4 rows at a time converted whole, then the
// token tiles over them, reading the stored rows front to back (what the hardware prefetcher
// streams best; measured faster than segments up to 8 tokens). x: [n_tokens, n_in] as given.
// Not BF16 (rows_bf16).
SPECLAB_AVX2 void rows_few_tokens(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                                  int n_rows, DType dtype, const float* x, int64_t n_in,
                                  int64_t n_tokens, float* park, float* buf) {
  const int64_t n_vec = n_in / 8 * 8;
  constexpr int64_t park_row = kTokenChunk * 8;
  const float* w[kTileRows];
  for (int j0 = 0; j0 < n_rows; j0 += kTileRows) {
    const int nr = std::min(kTileRows, n_rows - j0);
    for (int j = 0; j < nr; j++) {
      const uint8_t* src = row0 + (j0 + j) * row_bytes;
      if (dtype == DType::F32) {
        w[j] = reinterpret_cast<const float*>(src);
      } else {
        row_to_f32(buf + j * n_in, dtype, src, n_in);
        w[j] = buf + j * n_in;
      }
    }
    for (int64_t t = 0, nt = 0; t < n_tokens; t += nt) {
      nt = token_tile(n_tokens - t);
      kTiles[nr - 1][static_cast<int>(nt) - 1](w, x + t * n_in, n_in, n_vec, park + t * 8, park_row,
                                               /*first=*/true);
    }
    finish(out + j0, n_out, w, nr, x, n_in, n_tokens, park, park_row, 0, n_vec, n_in);
  }
}

}  // namespace

size_t scratch_floats(int64_t n_in) {
  return kRowBlock * kTokenChunk * 8 +
         static_cast<size_t>(std::max<int64_t>(kRowBlock * kSegment, kTileRows * n_in));
}

// More tokens: BF16 rows whole, as for a few tokens (rows_bf16), a chunk of tokens at a time;
// other dtypes per chunk of tokens, segments outer; in a segment, token tiles, then row tiles,
// so a tile's activations (3 x 2 KB) are reread from L1 by the item's row tiles and the
// converted rows (16 KB) by every token tile.
SPECLAB_AVX2 void rows(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes, int n_rows,
                       int n_next_rows, DType dtype, const float* xk, int64_t n_in,
                       int64_t n_tokens, float* scratch) {
  float* park = scratch;                               // [kRowBlock, kTokenChunk, 8] accumulators
  float* buf = scratch + kRowBlock * kTokenChunk * 8;  // converted weights
  constexpr int64_t park_row = kTokenChunk * 8;
  if (reads_even_odd(dtype)) {  // BF16: the activations are packed for rows_bf16
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
      rows_bf16(out + t0 * n_out, n_out, row0, row_bytes, n_rows, n_next_rows, xk + t0 * n_in, n_in,
                std::min(kTokenChunk, n_tokens - t0), park, buf);
    }
    return;
  }
  if (n_tokens <= kFewTokens) {
    rows_few_tokens(out, n_out, row0, row_bytes, n_rows, dtype, xk, n_in, n_tokens, park, buf);
    return;
  }
  const int64_t n_vec = n_in / 8 * 8;  // columns in whole 8-column slices; the rest: the tail
  const float* w[kRowBlock];
  // The next item's rows (contiguous after this item's) are prefetched into L2 a few lines per
  // tile call over the first chunk: a whole item ahead of the arithmetic.
  const uint8_t* item_next = row0 + n_rows * row_bytes;
  const int64_t item_lines = (n_next_rows * static_cast<int64_t>(row_bytes) + 63) / 64;
  const int64_t first_calls = n_segments(n_in) * ((std::min(kTokenChunk, n_tokens) + 2) / 3) *
                              ((n_rows + kTileRows - 1) / kTileRows);
  const int64_t item_lines_per_call = (item_lines + first_calls - 1) / first_calls;
  int64_t item_line = 0;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
    const int64_t n_chunk = std::min(kTokenChunk, n_tokens - t0);
    for (int64_t s0 = 0; s0 < n_in; s0 += kSegment) {
      const int64_t len = std::min(kSegment, n_in - s0);
      const size_t offset = dtype_row_bytes(dtype, s0);
      // What the arithmetic reads next is prefetched into L2 (a segment's tiles stream all the
      // tokens' activations through L1, which would evict it from there): these rows' next
      // segment; after the last, the first segment of the rows again (the next chunk of
      // tokens) or of the next item's rows. The prefetches are spread over the segment's tile
      // calls: issued at once, a hundred of them would wait for the core's few miss buffers.
      const bool last = s0 + len == n_in;
      const bool again = last && t0 + kTokenChunk < n_tokens;
      const uint8_t* next_row0 = !last   ? row0 + dtype_row_bytes(dtype, s0 + len)
                                 : again ? row0
                                         : row0 + n_rows * row_bytes;
      const int next_rows = !last || again ? n_rows : 0;  // (the next item: above)
      const int64_t next_lines =
          (dtype_row_bytes(dtype, std::min(kSegment, !last ? n_in - s0 - len : n_in)) + 63) / 64;
      const int64_t n_lines = next_rows * next_lines;
      const int64_t n_calls =
          (n_chunk + kTileTokens - 1) / kTileTokens * ((n_rows + kTileRows - 1) / kTileRows);
      const int64_t lines_per_call = (n_lines + n_calls - 1) / n_calls;
      int64_t line_row = 0, line_col = 0;  // the next line to prefetch: its row, its line
      for (int j = 0; j < n_rows; j++) {
        const uint8_t* src = row0 + j * row_bytes + offset;
        if (dtype == DType::F32) {
          w[j] = reinterpret_cast<const float*>(src);
        } else {
          row_to_f32(buf + j * kSegment, dtype, src, len);
          w[j] = buf + j * kSegment;
        }
      }
      const int64_t seg_vec = std::max<int64_t>(0, std::min(n_vec, s0 + len) - s0);
      const float* xs = xk + ((s0 / kSegment) * n_tokens + t0) * kSegment;  // token t0's
      for (int64_t t = 0, nt = 0; t < n_chunk; t += nt) {
        nt = token_tile(n_chunk - t);
        for (int j = 0; j < n_rows; j += kTileRows) {
          for (int64_t i = 0; i < lines_per_call && line_row < next_rows; i++) {
            _mm_prefetch(
                reinterpret_cast<const char*>(next_row0 + line_row * row_bytes + line_col * 64),
                _MM_HINT_T1);
            if (++line_col == next_lines) line_col = 0, line_row++;
          }
          for (int64_t i = 0; i < item_lines_per_call && item_line < item_lines; i++) {
            _mm_prefetch(reinterpret_cast<const char*>(item_next + 64 * item_line++), _MM_HINT_T1);
          }
          const int nr = std::min(kTileRows, n_rows - j);
          kTiles[nr - 1][static_cast<int>(nt) - 1](w + j, xs + t * kSegment, kSegment, seg_vec,
                                                   park + j * park_row + t * 8, park_row,
                                                   /*first=*/s0 == 0);
        }
      }
      if (last) {
        finish(out + t0 * n_out, n_out, w, n_rows, xs, kSegment, n_chunk, park, park_row, s0, n_vec,
               n_in);
      }
    }
  }
}

}  // namespace matmul_avx2
}  // namespace speclab
