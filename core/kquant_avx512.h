// K-quant super-blocks unpacked with AVX-512 byte operations (Q4_K's packed 6-bit scales and
// minimums, Q6_K's six-bit codes): shared by the FP32-activation kernels
// (core/matmul_avx512.cpp) and the int8 ones (core/matmul_vnni.cpp), whose targets include
// AVX-512 F + BW (the 128-bit operations here need SSSE3 / SSE4.1, which those imply).
#pragma once

#include <immintrin.h>

#include "core/dtype.h"

namespace speclab {

// A Q4_K super-block's 16 six-bit numbers as bytes [sc_0..7, m_0..7] (dtype_q4_k_scale_min's
// values), from one 16-byte load of the block's d,
// dmin and twelve scale bytes s_0..11: sc_0..3 = s_0..3 & 63, m_0..3 = s_4..7 & 63,
// sc_4..7 = (s_8..11 & 15) | (s_0..3 >> 6) << 4, m_4..7 = (s_8..11 >> 4) | (s_4..7 >> 6) << 4.
// Two byte shuffles and a few masks, where the scalar decode took about 30 instructions and a
// round trip through memory (measured on a Zen 4 guest: no change in time, the scalar decode ran
// beside the vector work; kept as the one decoder both kernels share).
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m128i q4_k_scale_min_bytes(
    const BlockQ4_K* b) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));  // d, dmin, s_0..11
  // low: [s_0..3, s_8..11, s_4..7, s_8..11]; high: the bytes whose top 2 bits complete the
  // 6-bit numbers, at [-, s_0..3, -, s_4..7].
  const __m128i low =
      _mm_shuffle_epi8(x, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m128i high =
      _mm_shuffle_epi8(x, _mm_setr_epi8(4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 10, 11, 8, 9, 10, 11));
  const __m128i top = _mm_and_si128(_mm_srli_epi16(high, 2), _mm_set1_epi8(0x30));
  const __m128i six = _mm_and_si128(low, _mm_set1_epi8(63));     // sc_0..3, m_0..3
  const __m128i nib_lo = _mm_and_si128(low, _mm_set1_epi8(15));  // sc_4..7 low bits
  const __m128i nib_hi = _mm_and_si128(_mm_srli_epi16(low, 4), _mm_set1_epi8(15));  // m_4..7
  // Bytes 0..3 and 8..11: six; 4..7: nib_lo | top; 12..15: nib_hi | top.
  const __m128i upper = _mm_or_si128(_mm_mask_blend_epi8(0xF000, nib_lo, nib_hi), top);
  return _mm_mask_blend_epi8(0xF0F0, six, upper);
}

// The 128 codes q (0..63, unsigned, in column order) of half n (0 or 1) of a Q6_K super-block,
// 64 per vector: *q01 = values 128n + 0..63 (groups 0 and 1), *q23 = 128n + 64..127 (groups 2
// and 3). Group g's low 4 bits are in ql[64n + 32(g % 2) + l] (low nibbles for g < 2, high for
// g >= 2), its high 2 bits are bits 2g, 2g + 1 of qh[32n + l]. The 64 bytes of ql come in one
// load and qh's 32 twice (both 256-bit halves), shifted word-wise by a different count in each
// half: qh >> 0 for group 0, >> 2 for group 1, + 4 for groups 2 and 3 (no bit crosses a byte
// once masked).
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void q6_k_codes(const BlockQ6_K* b,
                                                                            int n, __m512i* q01,
                                                                            __m512i* q23) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), low2 = _mm512_set1_epi8(3);
  const __m512i shift01 = _mm512_setr_epi64(0, 0, 0, 0, 0x0002000200020002, 0x0002000200020002,
                                            0x0002000200020002, 0x0002000200020002);
  const __m512i shift23 = _mm512_add_epi16(shift01, _mm512_set1_epi16(4));
  const __m512i ql = _mm512_loadu_si512(b->ql + 64 * n);
  const __m512i qh =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n)));
  const __m512i hi01 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift01), low2), 4);
  const __m512i hi23 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift23), low2), 4);
  *q01 = _mm512_or_si512(_mm512_and_si512(ql, low4), hi01);
  *q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), hi23);
}

}  // namespace speclab
