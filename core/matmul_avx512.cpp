// AVX-512 kernels of matmul_weights (F + BW + VL + DQ, chosen at run time by cpu_matmul.cpp).
//
// The weights are dequantized in registers straight from the stored bytes (no FP32 copy of a
// row is written), so one call streams each weight byte from memory once, and a register tile
// of 4 rows x up to 4 tokens (up to 6 in calls of more than 8 tokens) uses every dequantized
// 16-float slice for all its tokens (each activation slice for 4 rows).
//
// Summation order of one output (row r, token t), the same in every tile shape and work split:
//   one 16-lane accumulator over the row's 16-wide slices in order (FMA),
//   a fixed tree over the 16 lanes (hsum), then the scalar tail (n_in % 16) in order.
// The two slices of a full 32-column step are its columns [0, 16) and [16, 32), except for
// BF16 weights, whose slices are the step's even and odd columns (step_order: the activations
// are packed to match): a BF16 pair in a 32-bit lane is widened by one shift (the even column)
// or one mask (the odd one), where the halves in column order need a zero-extension and a shift
// for each 16 weights, and in a 4 x 6 tile those widenings took the two ports the FMAs issue
// on (llvm-mca's Ice Lake server model of the compiled loop: a step's 48 FMAs in 40 cycles
// with the column-order widening, 30 with even/odd, 24 at the FMA peak; measured on an Intel
// Xeon, BM_Matmul BF16 at 16 and 32 tokens ran 10-15% faster, docs/findings.md).
// A partial last step (n_in % 32) is read in column order by every loader.
// The accumulators of a tile are parked in a small buffer between column segments and token
// groups (a store and a reload change no bit), so how a call is cut up may depend on the
// number of tokens without changing any sum: a token's outputs are bit-identical whether it
// is computed alone or in a batch of any size, on any number of threads (batch invariance).
//
// Column segments. A work item (kRowBlock rows) runs segment by segment: for each segment of
// columns, every row tile of the item with every token of a pass (8 tokens, or 12 in calls of
// more; a call of more tokens runs several passes over the item: rows_avx512). A segment is
// short enough that the activations of all tokens for it stay in L1 (8 tokens of 3072 columns
// are 96 KB: without segments they stream from L2 for every row tile), so verifying 8 tokens
// reads each weight once from memory and the activations from L1.
//
// Software prefetch. Every unit of a row (a 32-column step, or a k-quant super-block of 8
// steps) prefetches the weights its row needs one segment later (in the last segment: the next
// work item's first one), a whole pass over the item's segment ahead of use. The hardware
// prefetchers alone kept too few lines in flight: one core streamed BF16 weights at 20 GB/s at k =
// 1 without it, 28 GB/s with it. Into L1 (prefetcht0) by default, into L2 only (prefetcht1) on
// Zen 4, where the L1 target made a call of several products per weight as slow as its reads
// plus its arithmetic (core/segment_prefetch.h). The target is a template parameter of each
// kernel, chosen per call by rows_fn / rows_bf16dot.
//
// BF16 weights with avx512_bf16 (the opt-in "avx512bf16" isa): the activations are rounded
// to BF16 once per call and multiplied with vdpbf16ps, 32 products per instruction and no
// conversion of the weights; lane j accumulates the pair (2j, 2j + 1) of each 32-wide slice,
// in order, then the same fixed tree. Half the arithmetic at the price of BF16 activations.
#include "core/matmul_avx512.h"

// GCC 12's AVX-512 headers build some intrinsics from an "undefined" register (x = x), which
// -Wuninitialized / -Wmaybe-uninitialized report once inlined here (GCC bug 105593); the
// values are never read. Silenced for this file only (GCC only: clang has no
// -Wmaybe-uninitialized and would warn about the unknown option).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/kquant_avx512.h"
#include "core/row_pairs.h"
#include "core/segment_prefetch.h"

namespace speclab {
namespace matmul_avx512 {
namespace {

#define SPECLAB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#define SPECLAB_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))

// Loops over the rows and tokens of a register tile are unrolled before the accumulator array
// is split into registers: without it GCC 12 kept the array in memory and stored all of it on
// every step (16 to 24 stores per 32 to 48 FMAs).
#define SPECLAB_UNROLL _Pragma("GCC unroll 16")

SPECLAB_AVX512 inline float hsum(__m512 v) {
  // The two 256-bit halves. extractf32x8 rather than castps512_ps256, whose GCC 12 header
  // implementation trips -Wuninitialized (GCC bug 105593); the values are the same.
  const __m256 lo = _mm512_extractf32x8_ps(v, 0);
  const __m256 hi = _mm512_extractf32x8_ps(v, 1);
  __m256 s = _mm256_add_ps(lo, hi);                                               // 8 lanes
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // 4 lanes
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));                                         // 2 lanes
  a = _mm_add_ss(a, _mm_movehdup_ps(a));                                          // 1 lane
  return _mm_cvtss_f32(a);
}

// v * p[0], v + p[0] and v - p[0] in every lane, the operand broadcast inside the instruction
// (vmulps / vaddps / vsubps m32{1to16}): the load unit broadcasts it, where a broadcast from a
// register (vpermd, vbroadcastss) takes a uop on the shuffle port, the port that the k-quant steps'
// permutes and widenings already fill. Written as assembly: with the intrinsics GCC 12 kept a
// k-quant unit's 16 factors in a register and broadcast each with vpermd (Q4_K, one core, one
// token, on an Intel Xeon: 1.80 ms per [8192, 3072] matrix, 1.55 ms with a vbroadcastss from
// memory); and on the Zen 5 guest even a vbroadcastss from memory costs: one thread, one token,
// [256, 2048] from L2, Q4_K's tables built as one FMA of two vbroadcastss against this
// multiply-and-subtract, and Q6_K's scales applied by a vbroadcastss against this multiply:
// Q4_K 32.9 -> 26.9 us, Q6_K 40.8 -> 34.7, Q4_1 29.5 -> 24.6 (fastest of 11 runs in turn);
// BM_MatmulOneCore Q4_1 / Q4_K / Q6_K one token, geometric mean 0.89 of before (6 pairs).
SPECLAB_AVX512 inline __m512 mul_broadcast(__m512 v, const float* p) {
  __m512 r;
  asm("vmulps %2%{1to16%}, %1, %0" : "=v"(r) : "v"(v), "m"(*p));
  return r;
}
SPECLAB_AVX512 inline __m512 add_broadcast(__m512 v, const float* p) {
  __m512 r;
  asm("vaddps %2%{1to16%}, %1, %0" : "=v"(r) : "v"(v), "m"(*p));
  return r;
}
SPECLAB_AVX512 inline __m512 sub_broadcast(__m512 v, const float* p) {
  __m512 r;
  asm("vsubps %2%{1to16%}, %1, %0" : "=v"(r) : "v"(v), "m"(*p));
  return r;
}

// Loaders whose every 32-column step stands alone: a unit of one step, nothing decoded per unit.
struct OneStepUnits {
  static constexpr int kUnitSteps = 1;
  struct Unit {};
  SPECLAB_AVX512 static inline Unit unit(const uint8_t*, int64_t) { return {}; }
};

// Loaders. A row is read in units of kUnitSteps 32-column steps (one step, or a whole k-quant
// super-block of 8); Unit u = unit(row, i) holds what a unit's steps share, decoded once per
// unit (a super-block's scales). For step s of the unit, at column i (i % 32 == 0): Block b =
// block(u, row, i, s) holds what the step's two halves share (a quantization block's scale),
// half(b, row, i, h) gives the FP32 weights [i + 16h, i + 16h + 16), exactly dtype_to_f32's
// values. offset(i): the byte offset of column i in a row; kLines: cache lines per unit to
// prefetch; scalar(row, j): one weight (float types only: quantized rows are whole blocks).
struct LoadF32 : OneStepUnits {
  struct Block {};
  static constexpr int kLines = 2;
  static size_t offset(int64_t i) { return 4 * static_cast<size_t>(i); }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t*, int64_t, int) { return {}; }
  SPECLAB_AVX512 static inline __m512 half(Block, const uint8_t* row, int64_t i, int h) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i + 16 * h);
  }
  static inline float scalar(const uint8_t* row, int64_t j) {
    float v;
    std::memcpy(&v, row + 4 * j, 4);
    return v;
  }
};

// BF16: a step's 32 weights in one load; half 0 = the even columns (the low 16 bits of each
// 32-bit lane, shifted up), half 1 = the odd columns (the high 16 bits, the low ones masked):
// one instruction per 16 weights, exactly bf16_to_f32's values. tail_half: 16 columns in order.
struct LoadBF16 : OneStepUnits {
  struct Block {
    __m512i v;
  };
  static constexpr int kLines = 1;
  static constexpr bool kEvenOdd = true;
  static size_t offset(int64_t i) { return 2 * static_cast<size_t>(i); }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t* row, int64_t i, int) {
    return {_mm512_loadu_si512(row + 2 * i)};
  }
  SPECLAB_AVX512 static inline __m512 half(Block b, const uint8_t*, int64_t, int h) {
    return _mm512_castsi512_ps(h == 0 ? _mm512_slli_epi32(b.v, 16)
                                      : _mm512_and_si512(b.v, _mm512_set1_epi32(-65536)));
  }
  SPECLAB_AVX512 static inline __m512 tail_half(const uint8_t* row, int64_t i) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
  }
  static inline float scalar(const uint8_t* row, int64_t j) {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, 2);
    return bf16_to_f32(h);
  }
};

// BF16 in row pairs (core/row_pairs.h): LoadBF16's values, a row's step s 128 s bytes past its
// first step (the other row of the pair's step between them), the rows of a tile found by
// row_pairs_row. Rows are whole steps (row_pairs_fit), so tails never occur; tail_half and scalar
// address the layout anyway.
struct LoadBF16Pairs : LoadBF16 {
  static constexpr bool kPaired = true;
  static size_t offset(int64_t i) { return 4 * static_cast<size_t>(i); }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t* row, int64_t i, int) {
    return {_mm512_loadu_si512(row + 4 * i)};
  }
  static size_t column_offset(int64_t j) {
    return 2 * kRowPairStepBytes * static_cast<size_t>(j / 32) + 2 * static_cast<size_t>(j % 32);
  }
  SPECLAB_AVX512 static inline __m512 tail_half(const uint8_t* row, int64_t i) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + column_offset(i)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
  }
  static inline float scalar(const uint8_t* row, int64_t j) {
    uint16_t h;
    std::memcpy(&h, row + column_offset(j), 2);
    return bf16_to_f32(h);
  }
};

struct LoadF16 : OneStepUnits {
  struct Block {};
  static constexpr int kLines = 1;
  static size_t offset(int64_t i) { return 2 * static_cast<size_t>(i); }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t*, int64_t, int) { return {}; }
  SPECLAB_AVX512 static inline __m512 half(Block, const uint8_t* row, int64_t i, int h) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * (i + 16 * h))));
  }
  static inline float scalar(const uint8_t* row, int64_t j) {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, 2);
    return fp16_to_f32(h);
  }
};

// Q8_0: d * q, the product rounded as dtype_to_f32 rounds it.
struct LoadQ8_0 : OneStepUnits {
  struct Block {
    __m512 d;
    const int8_t* qs;
  };
  static constexpr int kLines = 1;
  static size_t offset(int64_t i) {
    return static_cast<size_t>(i) / kQuantBlock * sizeof(BlockQ8_0);
  }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t* row, int64_t i, int) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row + offset(i));
    return {_mm512_set1_ps(_cvtsh_ss(b->d)), b->qs};
  }
  SPECLAB_AVX512 static inline __m512 half(const Block& b, const uint8_t*, int64_t, int h) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * h));
    return _mm512_mul_ps(b.d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
  static inline float scalar(const uint8_t*, int64_t) { return 0.0f; }
};

// Q4_0 / Q4_1: a block's 16 possible weights, table[q] = d * (q - 8) or d * q + m (rounded as
// dtype_to_f32 rounds them: a product, then a sum), are computed once per block; the nibbles
// pick them with vpermps (which reads the low 4 bits of each index), so the dequantization of
// 32 weights is one widening load, one shift and two permutes. d has at most 11 significant bits
// (FP16) and q 4, so the product d * q is exact in FP32 (15 bits of 24, and FP16's range is far
// inside FP32's): Q4_1's table d * q + m, the product exact and the sum rounded once, is the
// reference's round(round(d * q) + m). d and m are converted to FP32 once into memory and
// broadcast inside the multiply and the addition (mul_broadcast, add_broadcast).
template <bool kHasMin>
struct LoadQ4 : OneStepUnits {
  struct Block {
    __m512 table;
    __m512i idx;  // the 16 bytes, one per dword: low nibble = element j, high = j + 16
  };
  static constexpr size_t kBytes = kHasMin ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
  static constexpr int kLines = 1;
  static size_t offset(int64_t i) { return static_cast<size_t>(i) / kQuantBlock * kBytes; }
  SPECLAB_AVX512 static inline Block block(const Unit&, const uint8_t* row, int64_t i, int) {
    const uint8_t* p = row + offset(i);
    Block b;
    b.idx = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (kHasMin ? 4 : 2))));
    if (kHasMin) {
      uint32_t dm;
      std::memcpy(&dm, p, 4);
      alignas(16) float f[4];
      _mm_store_ps(f, _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dm))));  // d, m, 0, 0
      const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      b.table = add_broadcast(mul_broadcast(iota, f), f + 1);  // exact product: see above
    } else {
      uint16_t dbits;
      std::memcpy(&dbits, p, 2);
      const float d = _cvtsh_ss(dbits);
      const __m512 iota = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
      b.table = mul_broadcast(iota, &d);
    }
    return b;
  }
  SPECLAB_AVX512 static inline __m512 half(const Block& b, const uint8_t*, int64_t, int h) {
    return _mm512_permutexvar_ps(h == 0 ? b.idx : _mm512_srli_epi32(b.idx, 4), b.table);
  }
  static inline float scalar(const uint8_t*, int64_t) { return 0.0f; }
};

// Q4_K: a unit is a super-block (8 steps, 256 columns); step j is its sub-block j, whose 16
// possible weights table[q] = (d * sc_j) * q - dmin * m_j (a product, then a difference:
// dtype_to_f32's rounding) are computed once per step; its nibbles (the low ones of 32 bytes of
// qs for even j, the high ones for odd j) pick them with vpermps, which reads only the low 4
// bits of each index. d * sc_j has at most 11 + 6 significant bits, times q 21 <= 24, so the
// product is exact in FP32 and the difference, rounded once, is the reference's value; the table
// is a multiply and a subtraction whose factors are broadcast inside them (mul_broadcast,
// sub_broadcast: no shuffle uop, where one FMA of two vbroadcastss took 22% longer). The
// factors d * sc_j and dmin * m_j of all 8 sub-blocks are decoded once per
// unit: decoding the 6-bit scales and converting d and dmin for every step, with j known only
// at run time, was most of the work of a step (1B Q4_K_M decode at 1.6x llama.cpp's time).
struct LoadQ4_K {
  static constexpr int kUnitSteps = 8;
  struct Unit {
    float dm[16];  // d * sc_j at j, dmin * m_j at 8 + j
    const uint8_t* qs;
  };
  struct Block {
    __m512 table;
    const uint8_t* q;
    bool high;  // odd sub-block: the high nibbles
  };
  static constexpr int kLines = 3;  // 144 bytes a unit
  static size_t offset(int64_t i) {
    return static_cast<size_t>(i) * sizeof(BlockQ4_K) / kSuperBlock;
  }
  // The 16 six-bit numbers decoded as bytes in one vector (q4_k_scale_min_bytes), widened and
  // multiplied as one vector (the same single-precision products as the reference's), stored
  // for the steps' broadcasts.
  SPECLAB_AVX512 static inline Unit unit(const uint8_t* row, int64_t i) {
    const BlockQ4_K* b = reinterpret_cast<const BlockQ4_K*>(row) + i / kSuperBlock;
    const __m128i bytes = q4_k_scale_min_bytes(b);  // sc_0..7, m_0..7
    uint32_t dd;
    std::memcpy(&dd, b, 4);  // the block's first 4 bytes: d, then dmin (FP16)
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd)));  // d, dmin, 0, 0
    const __m512 factor =
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                              _mm512_castps128_ps512(f));
    Unit u;
    _mm512_storeu_ps(u.dm, _mm512_mul_ps(factor, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes))));
    u.qs = b->qs;
    return u;
  }
  SPECLAB_AVX512 static inline Block block(const Unit& u, const uint8_t*, int64_t, int j) {
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return {sub_broadcast(mul_broadcast(iota, u.dm + j), u.dm + 8 + j),  // an exact product
            u.qs + 32 * (j / 2), j % 2 != 0};
  }
  SPECLAB_AVX512 static inline __m512 half(const Block& b, const uint8_t*, int64_t, int h) {
    __m512i idx =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.q + 16 * h)));
    if (b.high) idx = _mm512_srli_epi32(idx, 4);
    return _mm512_permutexvar_ps(idx, b.table);
  }
  static inline float scalar(const uint8_t*, int64_t) { return 0.0f; }
};

// Q6_K: a unit is a super-block (8 steps); step s is group g = s % 4 of half n = s / 4, whose
// 32 six-bit codes have their low 4 bits in 32 bytes of ql (bytes 64n + 32(g % 2) + l, low
// nibbles for g < 2, high for g >= 2) and their high 2 bits in bits 2g, 2g + 1 of byte 32n + l
// of qh. Each 16-column half has its own scale: x = (d * scales[e / 16]) * (q - 32), as
// dtype_to_f32 computes it. Per unit, the 256 values q - 32 are put together as signed bytes,
// 64 at a time (two steps: the 64 ql bytes of a half n, their low or high nibbles, and the 32
// qh bytes repeated in both 256-bit halves, shifted by a different count in each), and the 16
// factors d * scales[e] computed as one vector; a step then widens 16 stored bytes per half.
// Putting each step's 32 codes together with 256-bit operations took twice the instructions.
struct LoadQ6_K {
  static constexpr int kUnitSteps = 8;
  struct Unit {
    alignas(64) int8_t q[kSuperBlock];  // q - 32, in column order
    float s[16];                        // d * scales[e]
  };
  struct Block {
    const int8_t* q;  // the step's 32 values q - 32
    const float* s;   // the step's two factors
  };
  static constexpr int kLines = 4;  // 210 bytes a unit
  static size_t offset(int64_t i) {
    return static_cast<size_t>(i) * sizeof(BlockQ6_K) / kSuperBlock;
  }
  SPECLAB_AVX512 static inline Unit unit(const uint8_t* row, int64_t i) {
    const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(row) + i / kSuperBlock;
    Unit u;
    const __m512i bias = _mm512_set1_epi8(32);
    SPECLAB_UNROLL for (int n = 0; n < 2; n++) {
      __m512i q01, q23;
      q6_k_codes(b, n, &q01, &q23);
      _mm512_store_si512(u.q + 128 * n, _mm512_sub_epi8(q01, bias));
      _mm512_store_si512(u.q + 128 * n + 64, _mm512_sub_epi8(q23, bias));
    }
    // The steps widen the stored bytes with loads (vpmovsxbd from memory): kept in registers,
    // each 16 of them took a vextracti32x4 more on the shuffle port.
    asm("" : "+m"(u.q));
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
    _mm512_storeu_ps(u.s, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b->d)),
                                        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc))));
    return u;
  }
  SPECLAB_AVX512 static inline Block block(const Unit& u, const uint8_t*, int64_t, int s) {
    return {u.q + 32 * s, u.s + 2 * s};
  }
  SPECLAB_AVX512 static inline __m512 half(const Block& b, const uint8_t*, int64_t, int h) {
    const __m128i q16 = _mm_load_si128(reinterpret_cast<const __m128i*>(b.q + 16 * h));
    return mul_broadcast(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q16)), b.s + h);
  }
  static inline float scalar(const uint8_t*, int64_t) { return 0.0f; }
};

// Whether a loader's two halves of a full step are its even and odd columns.
template <class L, class = void>
struct EvenOdd : std::false_type {};
template <class L>
struct EvenOdd<L, std::void_t<decltype(L::kEvenOdd)>> : std::bool_constant<L::kEvenOdd> {};

// Whether a loader reads rows stored in pairs (LoadBF16Pairs), and row r of a tile or work item
// whose first row (even, for pairs) is at row0: row_bytes apart, or as core/row_pairs.h lays
// them out. bytes_per_step: one row's bytes of a 32-column step (what a segment's length is
// measured in), whichever the layout.
template <class L, class = void>
struct Paired : std::false_type {};
template <class L>
struct Paired<L, std::void_t<decltype(L::kPaired)>> : std::bool_constant<L::kPaired> {};
template <class L>
inline const uint8_t* row_at(const uint8_t* row0, int64_t r, size_t row_bytes) {
  if constexpr (Paired<L>::value) {
    return row_pairs_row(row0, r, row_bytes);
  } else {
    return row0 + static_cast<size_t>(r) * row_bytes;
  }
}
template <class L>
inline size_t bytes_per_step() {
  return Paired<L>::value ? L::offset(32) / 2 : L::offset(32);
}

// The 16 columns [i, i + 16) of a float row, in column order (the half step at the end of a
// row of n_in % 32 >= 16 columns): half 0 of the step at i, or for even/odd loaders their own
// tail_half.
template <class L>
SPECLAB_AVX512 inline __m512 tail_half(const uint8_t* row, int64_t i) {
  if constexpr (EvenOdd<L>::value) {
    return L::tail_half(row, i);
  } else {
    return L::half(L::block(L::unit(row, i), row, i, 0), row, i, 0);
  }
}

// Tokens per pass over a work item (the tokens whose accumulators are parked at once) and per
// register tile, for calls of up to kMaxTokens tokens (decoding, verification) and for more
// (a batch of requests, a prompt chunk): 8 tokens as two groups of 4 x 4 tiles, and 12 tokens
// as two groups of 4 x 6 (24 accumulators: each widened weight slice feeds 6 FMAs, not 4).
// Accumulators of a pass between segments: row j, token t at acc[(j * kPass + t) * 16].
constexpr int kMaxTokens = 8;
constexpr int kManyPass = 12;
constexpr int kManyGroup = 6;

// A register tile's accumulators between column segments and token groups: resume_tile starts
// them from zero (first) or from their parked values (row r, token t at acc + r * kStride +
// 16 * t); park_tile stores them there. A store and a reload change no bit.
template <int R, int T, int64_t kStride>
SPECLAB_AVX512 __attribute__((always_inline)) inline void resume_tile(__m512 (&a)[R][T],
                                                                      const float* acc,
                                                                      bool first) {
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      a[r][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + r * kStride + 16 * t);
    }
  }
}
template <int R, int T, int64_t kStride>
SPECLAB_AVX512 __attribute__((always_inline)) inline void park_tile(const __m512 (&a)[R][T],
                                                                    float* acc) {
  SPECLAB_UNROLL for (int r = 0; r < R; r++) {
    SPECLAB_UNROLL for (int t = 0; t < T; t++) _mm512_store_ps(acc + r * kStride + 16 * t, a[r][t]);
  }
}

// One register tile, R rows x T tokens, over the 32-column steps [i0, i1) of one segment,
// plus the 16-column slice at i1 when half_tail (float rows with n_in % 32 >= 16, last
// segment). first: start from zero, else from acc. pf: prefetch distance in bytes; kPrefetch:
// into L1, into L2 or none (core/segment_prefetch.h).
// acc: row r token t at acc + r * kStride + 16 * t.
template <class L, int R, int T, int64_t kStride, TilePrefetch kPrefetch>
SPECLAB_AVX512 void tile(const uint8_t* row0, size_t row_bytes, const float* x, int64_t xs,
                         int64_t i0, int64_t i1, bool half_tail, bool first, float* acc,
                         int64_t pf) {
  __m512 a[R][T];
  resume_tile<R, T, kStride>(a, acc, first);
  const uint8_t* row[R];
  SPECLAB_UNROLL for (int r = 0; r < R; r++) row[r] = row_at<L>(row0, r, row_bytes);
  for (int64_t iu = i0; iu < i1; iu += 32 * L::kUnitSteps) {
    typename L::Unit u[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      SPECLAB_UNROLL for (int l = 0; l < L::kLines; l++) {
        prefetch_line<kPrefetch>(row[r] + L::offset(iu) + pf + 64 * l);  // (kNone: nothing)
      }
      u[r] = L::unit(row[r], iu);
    }
    // The steps of a unit unrolled, so that a loader's step index is a constant.
    SPECLAB_UNROLL for (int s = 0; s < L::kUnitSteps; s++) {
      const int64_t i = iu + 32 * s;
      typename L::Block b[R];
      SPECLAB_UNROLL for (int r = 0; r < R; r++) b[r] = L::block(u[r], row[r], i, s);
      const float* xi = x + (i >> 5) * xs;
      SPECLAB_UNROLL for (int h = 0; h < 2; h++) {
        __m512 w[R];
        SPECLAB_UNROLL for (int r = 0; r < R; r++) w[r] = L::half(b[r], row[r], i, h);
        SPECLAB_UNROLL for (int t = 0; t < T; t++) {
          const __m512 xv = _mm512_loadu_ps(xi + 32 * t + 16 * h);
          SPECLAB_UNROLL for (int r = 0; r < R; r++) a[r][t] = _mm512_fmadd_ps(w[r], xv, a[r][t]);
        }
      }
    }
  }
  if (half_tail) {
    const float* xi = x + (i1 >> 5) * xs;
    __m512 w[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) w[r] = tail_half<L>(row[r], i1);
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const __m512 xv = _mm512_loadu_ps(xi + 32 * t);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) a[r][t] = _mm512_fmadd_ps(w[r], xv, a[r][t]);
    }
  }
  park_tile<R, T, kStride>(a, acc);
}

using TileFn = void (*)(const uint8_t*, size_t, const float*, int64_t, int64_t, int64_t, bool, bool,
                        float*, int64_t);
// [T - 1]: the tile of R rows x T tokens, T = 1..sizeof...(T), accumulators kStride apart.
template <class L, int R, int64_t kStride, TilePrefetch kPrefetch, size_t... T>
constexpr std::array<TileFn, sizeof...(T)> tiles(std::index_sequence<T...>) {
  return {tile<L, R, static_cast<int>(T) + 1, kStride, kPrefetch>...};
}

// Segments: the packed activations of one segment (kMaxTokens tokens, 4 bytes per column) fit
// in kSegActBytes, so that they stay in L1 (48 KB on Zen 5) beside the weights of the segment
// and the ones being prefetched; a row's weights of a segment are at most kSegRowBytes, so one
// pass over a work item's segment (12 rows) reads ~12 KB and prefetches the next 12 KB.
// Measured on the Zen 5 machine, one core streaming [8192, 3072] matrices (CPU time, best of
// 6), k = 1 / 4 / 8, with 512, 768, 1024 and 1536 bytes per row all within ~10% of each other:
// BF16 1.70 / 1.80 / 2.68 ms, Q8_0 0.85 / 1.27 / 2.51 ms, Q4_1 0.82 / 1.27 / 2.69 ms at 1024;
// without the prefetch BF16 took 2.5 ms at k = 1, and with unequal segments (a short last
// one) Q8_0 took 1.3 to 1.9 ms at k = 1.
constexpr int64_t kSegActBytes = 16 << 10;
constexpr int64_t kSegRowBytes = 1024;

// Columns per segment for k tokens out of n32 (a multiple of 32 * unit_steps), act_bytes bytes
// per packed activation value (4: FP32, 2: BF16): whole units of unit_steps steps, at most the
// limits above (or one unit), and the segments of a row of about
// equal length (a short last segment would leave most of the next work item's first segment
// unprefetched).
int64_t segment_columns(int64_t k, int64_t act_bytes, size_t bytes_per_32, int64_t n32,
                        int unit_steps) {
  const int64_t by_act = kSegActBytes / (act_bytes * k) / 32;
  const int64_t by_row = kSegRowBytes / static_cast<int64_t>(bytes_per_32);
  const int64_t max_units = std::max<int64_t>(1, std::min(by_act, by_row) / unit_steps);
  const int64_t units = n32 / 32 / unit_steps;
  const int64_t n_seg = std::max<int64_t>(1, (units + max_units - 1) / max_units);
  return std::max<int64_t>(1, (units + n_seg - 1) / n_seg) * unit_steps * 32;
}

// One pass over a work item's column segments (rows_passes, rows_bf16dot): for each segment
// [s0, s1) of the n32 full-step columns (seg columns each), each group [g0, g0 + gk) of the
// pass's k tokens (`group` at a time), the 4-row tiles and then the rows left one at a time:
// tile(rows, r, g0, gk, s0, s1, last, pf), rows = 4 or 1, pf the software prefetch distance in
// bytes: the same row one segment on; from the last segment, the next work item's first
// segment (the same thread's next item, or past its range: harmless). offset(i): the byte
// offset of column i in a row.
template <class Offset, class Tile>
inline void for_each_segment_tile(int64_t n32, int64_t seg, size_t row_bytes, int n_rows, int k,
                                  int group, Offset offset, Tile tile) {
  for (int64_t s0 = 0;; s0 += seg) {
    const int64_t s1 = std::min(n32, s0 + seg);
    const bool last = s1 == n32;
    const int64_t pf = last ? static_cast<int64_t>(kRowBlock * row_bytes - offset(s0))
                            : static_cast<int64_t>(offset(s1) - offset(s0));
    for (int g0 = 0; g0 < k; g0 += group) {
      const int gk = std::min(group, k - g0);
      int r = 0;
      for (; r + 4 <= n_rows; r += 4) tile(4, r, g0, gk, s0, s1, last, pf);
      for (; r < n_rows; r++) tile(1, r, g0, gk, s0, s1, last, pf);
    }
    if (last) break;
  }
}

// The outputs of k tokens once their accumulators are parked (row r, token t at acc + r *
// kStride + 16 * t): the fixed tree of each accumulator plus the row's scalar tail (the columns
// past the last 16-column slice, in order), so that every streaming gives the same bits.
template <class L>
SPECLAB_AVX512 inline void finish_outputs(float* out, int64_t n_out, const uint8_t* row0,
                                          size_t row_bytes, int n_rows, const float* x, int64_t xs,
                                          int64_t n_in, int k, const float* acc, int64_t stride) {
  const int64_t n16 = n_in / 16 * 16;
  for (int r = 0; r < n_rows; r++) {
    const uint8_t* row = row_at<L>(row0, r, row_bytes);
    for (int t = 0; t < k; t++) {
      float tail = 0.0f;
      for (int64_t j = n16; j < n_in; j++)
        tail = __builtin_fmaf(L::scalar(row, j), x[(j >> 5) * xs + 32 * t + (j & 31)], tail);
      out[t * n_out + r] = hsum(_mm512_load_ps(acc + r * stride + 16 * t)) + tail;
    }
  }
}

// Register tiles of 4 rows x up to 4 tokens (16 accumulators, a step's weights for both
// halves in registers); rows left over (n_rows % 4) one at a time. 5 to 8 tokens run as two
// groups, [0, 4) and [4, k), over each segment while its weights are in L1: measured on the
// Zen 5 machine from L2, k = 8 as 3 rows x 8 tokens (24 accumulators) ran at 100 GFLOP/s,
// 2 x 8 at 96, two groups of 4 x 4 at 177 (k = 4: 171), and when streaming one [8192, 3072]
// BF16 matrix per call on one core: 4.3 ms (3 x 8), 4.5 (2 x 8), 2.6 ms (4 x 4 twice) against
// 1.8 ms for k = 1. More tokens: passes of at most kPass tokens, each over the whole work item,
// in groups of at most kGroup (rows_avx512 picks them); the passes of a call, and the groups of a
// pass, are of about equal size (balanced_part: 32 tokens as 11 + 11 + 10, each as 6 + 5 or
// 5 + 5, not 12 + 12 + 8 with a group of 2 whose tiles feed each widened slice to 2 FMAs).
template <class L, int kPass, int kGroup, SegmentPrefetch kTo>
SPECLAB_AVX512 void rows_passes(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                                int n_rows, const float* x, int64_t xs, int64_t n_in,
                                int64_t n_tokens) {
  static constexpr int64_t kStride = kPass * 16;
  static constexpr auto k4 =
      tiles<L, 4, kStride, tile_prefetch(kTo)>(std::make_index_sequence<kGroup>());
  static constexpr auto k1 =
      tiles<L, 1, kStride, tile_prefetch(kTo)>(std::make_index_sequence<kGroup>());
  alignas(64) float acc[kRowBlock * kStride];
  const int64_t n32 = n_in / 32 * 32, n16 = n_in / 16 * 16;
  const bool half_tail = n16 > n32;
  const int64_t pass = balanced_part(n_tokens, kPass);
  for (int64_t t0 = 0; t0 < n_tokens; t0 += pass) {
    const int k = static_cast<int>(std::min<int64_t>(pass, n_tokens - t0));
    const int group = static_cast<int>(balanced_part(k, kGroup));
    const float* xt = x + 32 * t0;
    const int64_t seg = segment_columns(k, 4, bytes_per_step<L>(), n32, L::kUnitSteps);
    for_each_segment_tile(
        n32, seg, row_bytes, n_rows, k, group, [](int64_t i) { return L::offset(i); },
        [&](int rows, int r, int g0, int gk, int64_t s0, int64_t s1, bool last, int64_t pf) {
          const TileFn fn = rows == 4 ? k4[gk - 1] : k1[gk - 1];
          fn(row_at<L>(row0, r, row_bytes), row_bytes, xt + 32 * g0, xs, s0, s1, last && half_tail,
             s0 == 0, acc + r * kStride + 16 * g0, pf);
        });
    finish_outputs<L>(out + t0 * n_out, n_out, row0, row_bytes, n_rows, xt, xs, n_in, k, acc,
                      kStride);
  }
}

// One token, each row of the item read whole (from its first column to its last) with no
// software prefetch: a thread's weights are then one sequential stream, which the hardware
// prefetcher follows on its own. Rows whose FP32 activations exceed kWholeRowActBytes (the
// down projection's 8192 columns: 32 KB, as large as Zen 4's L1) go a whole item (12 rows; 6
// for the quantized formats) at a time, so that each activation slice, then read from L2, serves
// several rows, except when prefetching ahead (below); shorter rows go one at a time. Each output
// is the same chain of FMAs as in a tile of rows_passes (one accumulator over the row's slices in
// order, the same tree, the same scalar tail), so its bits do not depend on the streaming.
//
// Measured on a Zen 4 guest (AMD EPYC, family 19h), docs/cpu-kernels.md: one core, a 540 MB set of
// [8192, 3072] BF16 matrices, 19-23 GB/s this way against 11-14 with 4-row tiles over prefetched
// segments; in a throwaway loop on two threads, one row at a time read 31-55 GB/s at 2048 and 3072
// columns and 25-27 at 8192, where 4, 8 and 12 rows at a time read 38-48 (and 29-43 at 3072);
// software prefetch at any distance and any hint was slower. Q4_0 / Q4_1, whose dequantization
// costs more per byte, were 10% slower this way.
//
// Calls of 2 to 4 tokens (a verification of a few drafts) of F32, F16 and BF16 weights read rows
// whole too, 6 at a time, while the segments prefetched into L1 (faster then: 3B T(4) 204-222 ms
// against 241-290); since the segments prefetch into L2 on Zen 4, they verify 2 and 4 tokens faster
// than whole rows (3B T(2) 221-226 ms against 237-293, 1B 68-89 against 86-114), so more than one
// token always takes segments. The measurements: docs/cpu-kernels.md "How a one-token product
// streams the rows".
//
// Long rows of the float formats take the whole work item in one tile (12 rows, 12 accumulators:
// each activation slice read from L2 once for 12 rows, not twice for 6). Measured on the Zen 4
// guest with BM_OneTokenByRowLength (BF16, 8192 columns, 2026-11-29, eight runs with 6- and 12-row
// tiles in turn inside each): in the three runs that met the fast memory state, 83, 84 and 83% of a
// paired read there against 78, 79 and 75%, and 93-94% against 87-93% in their slow passes; level
// in the five runs that met only the slow state (84-94% against 84-92%). Not the quantized formats
// (a block's scale per row would not leave registers for 12 rows); they, and a partial item's long
// rows, go kLongRowTile at a time.
constexpr int64_t kWholeRowActBytes = 16 << 10;
constexpr int kLongRowTile = 6;
static_assert(kRowBlock % kLongRowTile == 0);
template <class L>
constexpr bool kWholeItemLongRows = std::is_same_v<L, LoadF32> || std::is_same_v<L, LoadF16> ||
                                    std::is_same_v<L, LoadBF16> || std::is_same_v<L, LoadBF16Pairs>;

// Rows read one at a time may also prefetch in software kWholeRowAheadBytes ahead (kAhead:
// Streaming::kWholeRowsAhead). On the Zen 5 guest (2026-12-02, BM_DecodeByMemoryState, the 3B
// BF16 decode, throwaway switch alternated with none) that lifted the fast memory state's
// fraction of a paired read from 0.74-0.75 to 0.81-0.84 (8 KB; 4 KB 0.79-0.82, into L2 0.78-0.80)
// and left the slow state's (0.88-0.95) as it was; on Zen 4 every software prefetch of whole rows
// tried was slower (above).
//
// Prefetching ahead, long rows go one at a time too, each thread's weights one stream. On the
// Zen 5 guest (2026-12-02 14:30 UTC, BM_OneTokenByRowLength, 8192-column BF16 rows, three runs
// alternating with the 12-row tiles) that read 0.77-0.78 of a paired read in the fast memory
// state against 0.67-0.72, and 0.82-0.93 against 0.74-0.85 in the slow one (the whole 1B and 3B
// decodes moved within their noise).
//
// Rows stored in pairs (LoadBF16Pairs) go a pair at a time where plain rows go one at a time: a
// pair's two chains from one stream, each output's chain as before (docs/findings.md, "Rows
// repacked in pairs").
//
// One token, rows whole (above); x packed as for rows_passes (step s at x + s * xs).
template <class L, bool kAhead>
SPECLAB_AVX512 void rows_whole(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                               int n_rows, const float* x, int64_t xs, int64_t n_in) {
  static constexpr int64_t kStride = 16;  // acc: row r at acc + r * kStride
  const int64_t n32 = n_in / 32 * 32, n16 = n_in / 16 * 16;
  const bool half_tail = n16 > n32;
  alignas(64) float acc[kRowBlock * kStride];
  int r = 0;
  if (!kAhead && 4 * n_in > kWholeRowActBytes) {
    if constexpr (kWholeItemLongRows<L>) {
      if (n_rows == kRowBlock) {
        tile<L, kRowBlock, 1, kStride, TilePrefetch::kNone>(row0, row_bytes, x, xs, 0, n32,
                                                            half_tail, true, acc, 0);
        r = n_rows;
      }
    }
    for (; r + kLongRowTile <= n_rows; r += kLongRowTile) {
      tile<L, kLongRowTile, 1, kStride, TilePrefetch::kNone>(row_at<L>(row0, r, row_bytes),
                                                             row_bytes, x, xs, 0, n32, half_tail,
                                                             true, acc + r * kStride, 0);
    }
  }
  constexpr TilePrefetch kRowPrefetch = kAhead ? TilePrefetch::kToL1 : TilePrefetch::kNone;
  constexpr int kRowsAtOnce = Paired<L>::value ? 2 : 1;
  for (; r < n_rows; r += kRowsAtOnce) {
    tile<L, kRowsAtOnce, 1, kStride, kRowPrefetch>(row_at<L>(row0, r, row_bytes), row_bytes, x, xs,
                                                   0, n32, half_tail, true, acc + r * kStride,
                                                   kAhead ? kWholeRowAheadBytes : 0);
  }
  finish_outputs<L>(out, n_out, row0, row_bytes, n_rows, x, xs, n_in, 1, acc, kStride);
}

// Up to kMaxTokens tokens: passes of 8 as two groups of 4 x 4 tiles (above). More tokens (a
// batch of requests, a prompt chunk: compute-bound, each weight slice widened once per group):
// passes of 12 as two groups of 4 x 6, 24 accumulators, 6 FMAs per widened slice instead of 4.
// Measured on the Zen 5 machine, [8192, 3072] BF16, 2 threads, interleaved, two rounds: k = 32
// at 341-355 GFLOP/s with passes of 8, 374-388 with passes of 12 (18 or 24 tokens per pass of
// groups of 6: no better, 357-376 and 327-376); Q8_0 and Q4_1 unchanged within 3%.
// kWholeRows: one token as rows_whole.
template <class L, Streaming kOneToken, SegmentPrefetch kTo>
SPECLAB_AVX512 void rows_avx512(float* out, int64_t n_out, const uint8_t* row0, size_t row_bytes,
                                int n_rows, const float* x, int64_t xs, int64_t n_in,
                                int64_t n_tokens) {
  if (kOneToken != Streaming::kSegments && n_tokens == 1) {
    rows_whole<L, kOneToken == Streaming::kWholeRowsAhead>(out, n_out, row0, row_bytes, n_rows, x,
                                                           xs, n_in);
  } else if (n_tokens <= kMaxTokens) {
    rows_passes<L, kMaxTokens, 4, kTo>(out, n_out, row0, row_bytes, n_rows, x, xs, n_in, n_tokens);
  } else {
    rows_passes<L, kManyPass, kManyGroup, kTo>(out, n_out, row0, row_bytes, n_rows, x, xs, n_in,
                                               n_tokens);
  }
}

// BF16 weights x BF16 activations with vdpbf16ps. Pairs of BF16 are dotted into one FP32
// lane: lane j of step s gets w[32s+2j]*x[32s+2j] + w[32s+2j+1]*x[32s+2j+1], accumulated over
// the steps in order, then the same fixed tree (hsum). As in tile, the accumulators are parked
// between column segments and token groups (no bit changes), so a token's outputs are the same
// whatever the tile, segment or token count.
// One register tile, R rows x T tokens, over the full steps [i0, i1) plus, when n_tail > 0,
// the partial step at i1 (the last n_tail columns: weights masked to zero, activations
// zero-padded by pack_bf16). xb: packed as pack_bf16 (step s of token t at xb + s * xs + 32 t).
// first: start from zero, else from acc (row r, token t at acc + r * kStride + 16 * t).
// pf: software prefetch distance in bytes; kPrefetch: into L1, into L2 or none.
template <int R, int T, int64_t kStride, TilePrefetch kPrefetch>
SPECLAB_AVX512BF16 void tile_bf16dot(const uint8_t* row0, size_t row_bytes, const uint16_t* xb,
                                     int64_t xs, int64_t i0, int64_t i1, int64_t n_tail, bool first,
                                     float* acc, int64_t pf) {
  __m512 a[R][T];
  resume_tile<R, T, kStride>(a, acc, first);
  const uint8_t* row[R];
  SPECLAB_UNROLL for (int r = 0; r < R; r++) row[r] = row0 + r * row_bytes;
  for (int64_t i = i0; i < i1; i += 32) {
    __m512bh w[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      prefetch_line<kPrefetch>(row[r] + 2 * i + pf);
      w[r] = (__m512bh)_mm512_loadu_si512(row[r] + 2 * i);
    }
    const uint16_t* xi = xb + (i >> 5) * xs;
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(xi + 32 * t);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) a[r][t] = _mm512_dpbf16_ps(a[r][t], w[r], xv);
    }
  }
  if (n_tail > 0) {
    const __mmask32 mask = (__mmask32{1} << n_tail) - 1;
    __m512bh w[R];
    SPECLAB_UNROLL for (int r = 0; r < R; r++) {
      w[r] = (__m512bh)_mm512_maskz_loadu_epi16(mask, row[r] + 2 * i1);
    }
    const uint16_t* xi = xb + (i1 >> 5) * xs;
    SPECLAB_UNROLL for (int t = 0; t < T; t++) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(xi + 32 * t);
      SPECLAB_UNROLL for (int r = 0; r < R; r++) a[r][t] = _mm512_dpbf16_ps(a[r][t], w[r], xv);
    }
  }
  park_tile<R, T, kStride>(a, acc);
}

using Bf16TileFn = void (*)(const uint8_t*, size_t, const uint16_t*, int64_t, int64_t, int64_t,
                            int64_t, bool, float*, int64_t);
// [T - 1]: the tile of R rows x T tokens, T = 1..sizeof...(T), accumulators kStride apart,
// with software prefetch (segments) or without (whole rows).
template <int R, int64_t kStride, TilePrefetch kPrefetch, size_t... T>
constexpr std::array<Bf16TileFn, sizeof...(T)> bf16dot_tiles(std::index_sequence<T...>) {
  return {tile_bf16dot<R, static_cast<int>(T) + 1, kStride, kPrefetch>...};
}

template <class T, class Convert>
inline void pack_steps(T* dst, const float* x, int64_t n_tokens, int64_t n_in, int64_t chunk,
                       int64_t s0, int64_t s1, Convert convert) {
  const int64_t n_steps = (n_in + 31) / 32;
  for (int64_t t = 0; t < n_tokens; t++) {
    const int64_t c = t / chunk, n_c = std::min(chunk, n_tokens - c * chunk);
    T* base = dst + c * n_steps * chunk * 32 + (t - c * chunk) * 32;
    for (int64_t s = s0; s < s1; s++) {
      const int64_t i0 = s * 32, n = std::min<int64_t>(32, n_in - i0);
      convert(base + s * n_c * 32, x + t * n_in + i0, n);
    }
  }
}

struct PackF32 {  // (a lambda would not inherit the target attribute)
  SPECLAB_AVX512 void operator()(float* d, const float* src, int64_t n) const {
    if (n == 32) {
      _mm512_storeu_ps(d, _mm512_loadu_ps(src));
      _mm512_storeu_ps(d + 16, _mm512_loadu_ps(src + 16));
    } else {
      for (int64_t j = 0; j < 32; j++) d[j] = j < n ? src[j] : 0.0f;
    }
  }
};

// The same with a full step's values in even/odd order: x[2j] at j, x[2j + 1] at 16 + j.
struct PackF32EvenOdd {
  SPECLAB_AVX512 void operator()(float* d, const float* src, int64_t n) const {
    if (n == 32) {
      const __m512 lo = _mm512_loadu_ps(src), hi = _mm512_loadu_ps(src + 16);
      const __m512i even =
          _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
      const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
      _mm512_storeu_ps(d, _mm512_permutex2var_ps(lo, even, hi));
      _mm512_storeu_ps(d + 16, _mm512_permutex2var_ps(lo, odd, hi));
    } else {
      PackF32{}(d, src, n);
    }
  }
};

// Round-to-nearest-even FP32 -> BF16 (vcvtne2ps2bf16; f32_to_bf16 for a partial step).
struct PackBf16 {
  SPECLAB_AVX512BF16 void operator()(uint16_t* d, const float* src, int64_t n) const {
    if (n == 32) {
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
      _mm512_storeu_si512(d, (__m512i)h);
    } else {
      for (int64_t j = 0; j < 32; j++) d[j] = j < n ? f32_to_bf16(src[j]) : 0;
    }
  }
};

}  // namespace

// Tokens a 6-row tile takes over whole rows in rows_bf16dot: 6 x 4 accumulators, 6 weight
// vectors and an activation vector fill 31 of the 32 registers.
constexpr int kBf16LongRowTileTokens = 4;
// Activation bytes up to which rows_bf16dot reads whole rows one at a time.
constexpr int64_t kBf16OneRowActBytes = 8 << 10;

// vdpbf16ps over a work item. With Streaming::kWholeRows, calls of up to 6 tokens read each
// row whole, no software prefetch (as rows_whole: on Zen 4 a thread's weights are then
// one sequential stream): one row at a time while the row's BF16 activations for all the
// tokens take at most kBf16OneRowActBytes (one token over up to 4096 columns, two over up to
// 2048), else tiles of kLongRowTile rows (up to kBf16LongRowTileTokens tokens) or 4 rows (5 or
// 6), so that each activation vector serves several rows. The limit was 16 KB until
// 2026-11-29: 6-row tiles were faster on the Zen 4 guest for 12 and 16 KB (3B k = 2 162-211 ms
// against 197-227, 1B k = 4 81-92 against 100-112), not for 8 KB (1B k = 2 61-94 against
// 58-79).
// Otherwise column segments as rows_passes: for each segment, every 4-row tile with every token of
// a pass (up to 12 tokens as groups of about equal size, at most 6: 24 accumulators, each loaded
// weight vector feeds 6 products), the weights of the next segment prefetched; the segment's
// activations for the pass (at most 12 x 2 x 512 bytes) stay in L1. Measured on the Zen 4 guest,
// [8192, 3072] BF16, 2 threads, against the previous kernel (4-row tiles over whole rows for up to
// 6 tokens, 3-row tiles over whole rows in passes of 8 for more): docs/cpu-kernels.md "The
// vdpbf16ps kernel".

SPECLAB_AVX512BF16 void rows_bf16dot(float* out, int64_t n_out, const uint8_t* row0,
                                     size_t row_bytes, int n_rows, const uint16_t* xb, int64_t xs,
                                     int64_t n_in, int64_t n_tokens, Streaming one_token,
                                     SegmentPrefetch prefetch) {
  constexpr int kPass = 12, kGroup = 6;
  constexpr int64_t kStride = kPass * 16;
  // Segment tiles [prefetch into L1, into L2].
  static constexpr std::array<std::array<Bf16TileFn, kGroup>, 2> k4 = {
      bf16dot_tiles<4, kStride, TilePrefetch::kToL1>(std::make_index_sequence<kGroup>()),
      bf16dot_tiles<4, kStride, TilePrefetch::kToL2>(std::make_index_sequence<kGroup>())};
  static constexpr std::array<std::array<Bf16TileFn, kGroup>, 2> k1 = {
      bf16dot_tiles<1, kStride, TilePrefetch::kToL1>(std::make_index_sequence<kGroup>()),
      bf16dot_tiles<1, kStride, TilePrefetch::kToL2>(std::make_index_sequence<kGroup>())};
  const int to_l2 = prefetch == SegmentPrefetch::kToL2 ? 1 : 0;
  alignas(64) float acc[kRowBlock * kStride];
  const int64_t n32 = n_in / 32 * 32, n_tail = n_in - n32;
  if (one_token != Streaming::kSegments && n_tokens <= kGroup) {
    constexpr int64_t kWholeStride = 16 * kGroup;
    static constexpr auto w6 = bf16dot_tiles<kLongRowTile, kWholeStride, TilePrefetch::kNone>(
        std::make_index_sequence<kBf16LongRowTileTokens>());
    static constexpr auto w4 =
        bf16dot_tiles<4, kWholeStride, TilePrefetch::kNone>(std::make_index_sequence<kGroup>());
    static constexpr auto w1 =
        bf16dot_tiles<1, kWholeStride, TilePrefetch::kNone>(std::make_index_sequence<kGroup>());
    const int k = static_cast<int>(n_tokens);
    // One row at a time while the activations of all the tokens take at most
    // kBf16OneRowActBytes; else 6 rows (up to 4 tokens) or 4 rows (5 or 6 tokens).
    const bool one_row = 2 * k * n_in <= kBf16OneRowActBytes;
    const int tile_rows = one_row ? 1 : (k <= kBf16LongRowTileTokens ? kLongRowTile : 4);
    int r = 0;
    for (; tile_rows > 1 && r + tile_rows <= n_rows; r += tile_rows) {
      // (6-row tiles only for k <= kBf16LongRowTileTokens: tile_rows above)
      const Bf16TileFn tile = tile_rows == 4 ? w4[k - 1] : w6[k - 1];
      tile(row0 + r * row_bytes, row_bytes, xb, xs, 0, n32, n_tail, true, acc + r * kWholeStride,
           0);
    }
    for (; r < n_rows; r++) {
      w1[k - 1](row0 + r * row_bytes, row_bytes, xb, xs, 0, n32, n_tail, true,
                acc + r * kWholeStride, 0);
    }
    for (r = 0; r < n_rows; r++) {
      for (int t = 0; t < k; t++) {
        out[t * n_out + r] = hsum(_mm512_load_ps(acc + r * kWholeStride + 16 * t));
      }
    }
    return;
  }
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kPass) {
    const int k = static_cast<int>(std::min<int64_t>(kPass, n_tokens - t0));
    const int group = static_cast<int>(balanced_part(k, kGroup));  // groups of about equal size
    const uint16_t* xt = xb + 32 * t0;
    const int64_t seg = segment_columns(k, 2, 64, n32, 1);
    for_each_segment_tile(
        n32, seg, row_bytes, n_rows, k, group, [](int64_t i) { return 2 * i; },
        [&](int rows, int r, int g0, int gk, int64_t s0, int64_t s1, bool last, int64_t pf) {
          const Bf16TileFn fn = rows == 4 ? k4[to_l2][gk - 1] : k1[to_l2][gk - 1];
          fn(row0 + r * row_bytes, row_bytes, xt + 32 * g0, xs, s0, s1, last ? n_tail : 0, s0 == 0,
             acc + r * kStride + 16 * g0, pf);
        });
    for (int r = 0; r < n_rows; r++) {
      for (int t = 0; t < k; t++) {
        out[(t0 + t) * n_out + r] = hsum(_mm512_load_ps(acc + r * kStride + 16 * t));
      }
    }
  }
}

SPECLAB_AVX512 void pack_f32(float* dst, const float* x, int64_t n_tokens, int64_t n_in,
                             int64_t chunk, int64_t s0, int64_t s1, StepOrder order) {
  if (order == StepOrder::kEvenOdd) {
    pack_steps(dst, x, n_tokens, n_in, chunk, s0, s1, PackF32EvenOdd{});
  } else {
    pack_steps(dst, x, n_tokens, n_in, chunk, s0, s1, PackF32{});
  }
}

StepOrder step_order(DType dtype) {
  return dtype == DType::BF16 && EvenOdd<LoadBF16>::value ? StepOrder::kEvenOdd
                                                          : StepOrder::kNatural;
}

SPECLAB_AVX512BF16 void pack_bf16(uint16_t* dst, const float* x, int64_t n_tokens, int64_t n_in,
                                  int64_t chunk, int64_t s0, int64_t s1) {
  pack_steps(dst, x, n_tokens, n_in, chunk, s0, s1, PackBf16{});
}

template <Streaming kOneToken, SegmentPrefetch kTo>
RowsFn rows_fn_for(DType dtype, RowLayout layout) {
  if (layout == RowLayout::kRowPairs) {
    return dtype == DType::BF16 ? rows_avx512<LoadBF16Pairs, kOneToken, kTo> : nullptr;
  }
  switch (dtype) {
    case DType::F32:
      return rows_avx512<LoadF32, kOneToken, kTo>;
    case DType::F16:
      return rows_avx512<LoadF16, kOneToken, kTo>;
    case DType::BF16:
      return rows_avx512<LoadBF16, kOneToken, kTo>;
    case DType::Q8_0:
      return rows_avx512<LoadQ8_0, kOneToken, kTo>;
    case DType::Q4_0:
      return rows_avx512<LoadQ4<false>, kOneToken, kTo>;
    case DType::Q4_1:
      return rows_avx512<LoadQ4<true>, kOneToken, kTo>;
    case DType::Q4_K:
      return rows_avx512<LoadQ4_K, kOneToken, kTo>;
    case DType::Q6_K:
      return rows_avx512<LoadQ6_K, kOneToken, kTo>;
  }
  return nullptr;
}

RowsFn rows_fn(DType dtype, RowLayout layout, Streaming one_token, SegmentPrefetch prefetch) {
  constexpr Streaming kWhole = Streaming::kWholeRows, kSegments = Streaming::kSegments;
  constexpr SegmentPrefetch kL1 = SegmentPrefetch::kToL1, kL2 = SegmentPrefetch::kToL2;
  constexpr Streaming kAhead = Streaming::kWholeRowsAhead;
  if (one_token == kAhead) {
    return prefetch == kL2 ? rows_fn_for<kAhead, kL2>(dtype, layout)
                           : rows_fn_for<kAhead, kL1>(dtype, layout);
  }
  if (one_token == kWhole) {
    return prefetch == kL2 ? rows_fn_for<kWhole, kL2>(dtype, layout)
                           : rows_fn_for<kWhole, kL1>(dtype, layout);
  }
  return prefetch == kL2 ? rows_fn_for<kSegments, kL2>(dtype, layout)
                         : rows_fn_for<kSegments, kL1>(dtype, layout);
}

}  // namespace matmul_avx512
}  // namespace speclab
