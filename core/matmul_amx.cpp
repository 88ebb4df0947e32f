// AMX kernels of matmul_weights for BF16 weights (the opt-in "amxbf16" path; core/matmul_amx.h).
//
// out = x · Wᵀ as tile products: tdpbf16ps C[M][N] += A[M][K] · B[K][N] with A a tile of 16
// weight rows x 32 columns (read in place: a tile row is 64 bytes of a stored row), B the same 32
// columns of up to 16 tokens' activations as 16 column pairs (packed once per call by pack), and
// C 16 rows x up to 16 tokens of FP32 sums: one instruction does 16 x 16 x 32 multiply-adds
// where vfmadd231ps does 16. The weights still stream from memory once per call, so decoding
// stays a read of the weights while verifying 32 tokens stops being arithmetic-bound.
//
// Tile registers: C (accumulators) 0-3, A (weights) 4 and 5, B (activations) 6 and 7. A pass
// runs one row of the work item's tile grid over every step of the rows:
//   up to 16 tokens: four 16-row blocks (C0-C3), the A tiles in turn, B tile 6 on even steps
//     and 7 on odd ones (reloading one B tile every step stalled the next step behind the
//     instructions still reading it: one core's L2-resident 64 x 3072 item at one token went
//     from 15 to 24 GB/s of weights)
//   17-32 tokens: two 16-row blocks x two 16-token blocks (C0-C3), B tiles 6 and 7
// (more tokens: one such pass per 32 tokens, rereading the item's rows from the caches). Four
// accumulators in flight hide tdpbf16ps's latency behind its issue interval. A row block of
// fewer than 16 rows (the matrix's last) gets tiles of that many rows, so no tile reads past the
// last row. Each output's sum runs over the row's steps in order whatever the pass, so the
// arrangement changes no bit. No software prefetch: with the next eight steps of every row of a
// pass prefetched into L2, one core streamed 12-13 GB/s of weights from memory, without it
// 14-16 (the hardware prefetchers follow the 64 rows).
#include "core/matmul_amx.h"

#include <immintrin.h>

#include <algorithm>

#include "core/amx_tiles.h"

namespace speclab {
namespace matmul_amx {
namespace {

// Tiles for a pass of NR row blocks of `rows` rows x NT token blocks (nb0, nb1 tokens).
template <int NR, int NT>
void configure(int rows, int nb0, int nb1) {
  static_assert(NR * NT <= 4 && NT <= 2, "four accumulators");
  AmxTileConfig c;
  for (int q = 0; q < NR * NT; q++) {
    c.rows[q] = static_cast<uint8_t>(rows);
    c.colsb[q] = static_cast<uint16_t>(4 * (q < NR ? nb0 : nb1));
  }
  for (int a : {4, 5}) {
    c.rows[a] = static_cast<uint8_t>(rows);
    c.colsb[a] = 64;
  }
  c.rows[6] = 16;
  c.colsb[6] = static_cast<uint16_t>(4 * nb0);
  c.rows[7] = 16;  // one token block: the next step's B tile; two: the second block's
  c.colsb[7] = static_cast<uint16_t>(4 * (NT == 2 ? nb1 : nb0));
  amx_configure(c);
}

// Accumulator c += A tile a times the B tile B (6 or 7) of the enclosing row_blocks.
#define SPECLAB_TILE_DP_INTO_B(c, a) \
  if constexpr (B == 6) {            \
    SPECLAB_TILE_DP(c, a, 6);        \
  } else {                           \
    SPECLAB_TILE_DP(c, a, 7);        \
  }

// One step of NR row blocks (16 rows a block, rb bytes a row) against B tile B: block i into
// accumulator i, its weights through A tiles 4 and 5 in turn.
template <int NR, int B>
inline void row_blocks(const uint8_t* a, int64_t rb) {
  SPECLAB_TILE_LOAD(4, a, rb);
  SPECLAB_TILE_DP_INTO_B(0, 4)
  if constexpr (NR > 1) {
    SPECLAB_TILE_LOAD(5, a + 16 * rb, rb);
    SPECLAB_TILE_DP_INTO_B(1, 5)
  }
  if constexpr (NR > 2) {
    SPECLAB_TILE_LOAD(4, a + 32 * rb, rb);
    SPECLAB_TILE_DP_INTO_B(2, 4)
  }
  if constexpr (NR > 3) {
    SPECLAB_TILE_LOAD(5, a + 48 * rb, rb);
    SPECLAB_TILE_DP_INTO_B(3, 5)
  }
}
#undef SPECLAB_TILE_DP_INTO_B

// One pass over every step: accumulator q (= i + NR * j) of row block i and token block j.
//   a0: the pass's first weight row; b0: the first token's pairs in the chunk's first step
//   (step s at b0 + s * step_elems, pair j of a token block at + j * b_stride bytes)
//   c: [NR * NT][16][16] FP32, the accumulators stored 64 bytes a row
template <int NR, int NT>
void pass(const uint8_t* a0, size_t row_bytes, const uint16_t* b0, int64_t step_elems,
          int64_t b_stride, int64_t n_steps, float* c) {
  SPECLAB_TILE_ZERO(0);
  if (NR * NT > 1) SPECLAB_TILE_ZERO(1);
  if (NR * NT > 2) SPECLAB_TILE_ZERO(2);
  if (NR * NT > 3) SPECLAB_TILE_ZERO(3);
  const int64_t rb = static_cast<int64_t>(row_bytes);
  const uint8_t* a = a0;
  const uint16_t* b = b0;
  for (int64_t s = 0; s < n_steps; s++, a += 64, b += step_elems) {
    if constexpr (NT == 1) {
      // Even steps multiply B tile 6, odd steps B tile 7: a step's activations load while the
      // step before still reads its own (reloading one B tile every step stalled on it).
      if (s % 2 == 0) {
        SPECLAB_TILE_LOAD(6, b, b_stride);
        row_blocks<NR, 6>(a, rb);
      } else {
        SPECLAB_TILE_LOAD(7, b, b_stride);
        row_blocks<NR, 7>(a, rb);
      }
    } else if constexpr (NR == 1) {
      SPECLAB_TILE_LOAD(6, b, b_stride);
      SPECLAB_TILE_LOAD(7, b + 32, b_stride);  // tokens 16-31 of the block pair
      SPECLAB_TILE_LOAD(4, a, rb);
      SPECLAB_TILE_DP(0, 4, 6);
      SPECLAB_TILE_DP(1, 4, 7);
    } else {
      SPECLAB_TILE_LOAD(6, b, b_stride);
      SPECLAB_TILE_LOAD(7, b + 32, b_stride);
      SPECLAB_TILE_LOAD(4, a, rb);
      SPECLAB_TILE_LOAD(5, a + 16 * rb, rb);
      SPECLAB_TILE_DP(0, 4, 6);
      SPECLAB_TILE_DP(1, 5, 6);
      SPECLAB_TILE_DP(2, 4, 7);
      SPECLAB_TILE_DP(3, 5, 7);
    }
  }
  SPECLAB_TILE_STORE(0, c, 64);
  if (NR * NT > 1) SPECLAB_TILE_STORE(1, c + 256, 64);
  if (NR * NT > 2) SPECLAB_TILE_STORE(2, c + 512, 64);
  if (NR * NT > 3) SPECLAB_TILE_STORE(3, c + 768, 64);
}

// Configures and runs a pass, then writes its accumulators to out: accumulator q holds rows
// [16 (q % NR), +rows) of the pass and tokens [t0 + 16 (q / NR), +nb) of the call.
template <int NR, int NT>
void run_pass(float* out, int64_t n_out, const uint8_t* a0, size_t row_bytes, int rows,
              const uint16_t* b0, int64_t step_elems, int64_t b_stride, int64_t n_steps, int64_t t0,
              int nb0, int nb1) {
  alignas(64) float c[4][16][16];
  configure<NR, NT>(rows, nb0, nb1);
  pass<NR, NT>(a0, row_bytes, b0, step_elems, b_stride, n_steps, &c[0][0][0]);
  for (int q = 0; q < NR * NT; q++) {
    const int i = q % NR, j = q / NR, nb = j == 0 ? nb0 : nb1;
    for (int n = 0; n < nb; n++) {
      float* o = out + (t0 + 16 * j + n) * n_out + 16 * i;
      for (int m = 0; m < rows; m++) o[m] = c[q][m][n];
    }
  }
}

}  // namespace

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"))) void pack(
    uint16_t* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk, int64_t s0,
    int64_t s1) {
  const int64_t n_steps = n_in / 32;
  for (int64_t t = 0; t < n_tokens; t++) {
    const int64_t c = t / chunk, tc = t - c * chunk, n_c = std::min(chunk, n_tokens - c * chunk);
    // Pair j of token tc in step s: 32-bit word s * 16 n_c + j n_c + tc of the chunk.
    int32_t* base = reinterpret_cast<int32_t*>(dst + c * n_steps * chunk * 32) + tc;
    const __m512i pair_offsets =
        _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                           _mm512_set1_epi32(static_cast<int>(n_c)));
    const float* xt = x + t * n_in;
    for (int64_t s = s0; s < s1; s++) {
      // Round to nearest even (vcvtne2ps2bf16, as the avx512bf16 path): word j = columns 2j, 2j+1.
      const __m512bh h =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xt + 32 * s + 16), _mm512_loadu_ps(xt + 32 * s));
      _mm512_i32scatter_epi32(base + s * 16 * n_c, pair_offsets, (__m512i)h, 4);
    }
  }
}

void rows(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes, int n_rows,
          const uint16_t* xb, int64_t n_in, int64_t n_tokens) {
  const int64_t n_steps = n_in / 32;
  const int64_t step_elems = n_tokens * 32;  // a step of the chunk: 16 pairs x n_tokens x 2
  const int64_t b_stride = n_tokens * 4;     // bytes from one pair to the next in a B tile
  const int full = n_rows / 16, rem = n_rows % 16;
  const int64_t rb16 = 16 * static_cast<int64_t>(row_bytes);
  for (int64_t t0 = 0; t0 < n_tokens; t0 += 32) {
    const int nb0 = static_cast<int>(std::min<int64_t>(16, n_tokens - t0));
    const int nb1 = static_cast<int>(std::clamp<int64_t>(n_tokens - t0 - 16, 0, 16));
    const uint16_t* b0 = xb + 2 * t0;
    float* o = out;
    const uint8_t* a = row0;
    if (nb1 == 0) {
      // One pass over the item's whole 16-row blocks: [k] takes k of them.
      using WidePass = void (*)(float*, int64_t, const uint8_t*, size_t, int, const uint16_t*,
                                int64_t, int64_t, int64_t, int64_t, int, int);
      static constexpr WidePass kWide[5] = {nullptr, run_pass<1, 1>, run_pass<2, 1>, run_pass<3, 1>,
                                            run_pass<4, 1>};
      if (full > 0) {
        kWide[full](o, n_out, a, row_bytes, 16, b0, step_elems, b_stride, n_steps, t0, nb0, 0);
      }
      if (rem > 0) {
        run_pass<1, 1>(o + 16 * full, n_out, a + full * rb16, row_bytes, rem, b0, step_elems,
                       b_stride, n_steps, t0, nb0, 0);
      }
    } else {
      int i = 0;
      for (; i + 2 <= full; i += 2) {
        run_pass<2, 2>(o + 16 * i, n_out, a + i * rb16, row_bytes, 16, b0, step_elems, b_stride,
                       n_steps, t0, nb0, nb1);
      }
      if (i < full) {
        run_pass<1, 2>(o + 16 * i, n_out, a + i * rb16, row_bytes, 16, b0, step_elems, b_stride,
                       n_steps, t0, nb0, nb1);
      }
      if (rem > 0) {
        run_pass<1, 2>(o + 16 * full, n_out, a + full * rb16, row_bytes, rem, b0, step_elems,
                       b_stride, n_steps, t0, nb0, nb1);
      }
    }
  }
  amx_release();
}

}  // namespace matmul_amx
}  // namespace speclab
