// Q6_K's six-bit codes put together with AVX-512 byte operations: shared by the FP32-activation
// kernels (core/matmul_avx512.cpp) and the int8 ones (core/matmul_vnni.cpp), whose targets
// include AVX-512 F + BW.
#pragma once

#include <immintrin.h>

#include "core/dtype.h"

namespace speclab {

// The 128 codes q (0..63, unsigned, in column order) of half n (0 or 1) of a Q6_K super-block,
// 64 per vector: *q01 = values 128n + 0..63 (groups 0 and 1), *q23 = 128n + 64..127 (groups 2
// and 3). Group g's low 4 bits are in ql[64n + 32(g % 2) + l] (low nibbles for g < 2, high for
// g >= 2), its high 2 bits are bits 2g, 2g + 1 of qh[32n + l]. The 64 bytes of ql come in one
// load and qh's 32 twice (both 256-bit halves), shifted word-wise by a different count in each
// half: qh >> 0 for group 0, >> 2 for group 1, + 4 for groups 2 and 3 (no bit crosses a byte
// once masked).
__attribute__((target("avx512f,avx512bw"))) inline void q6_k_codes(const BlockQ6_K* b, int n,
                                                                   __m512i* q01, __m512i* q23) {
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
