// Where the AVX-512 kernels' software prefetch puts the weights of the next column segment.
//
// A tile over column segments (core/matmul_avx512.cpp, core/matmul_vnni.cpp) prefetches the
// weights its rows need one segment later. prefetcht0 brings each line into L1 (and L2);
// prefetcht1 into L2 only, where the core's demand loads pick it up a segment later. On the Zen 4
// guest the L1 target was the slower one once a call does several products per weight (2 to 8
// tokens, and the 4-bit formats' one-token products): a prefetch into L1 holds one of the L1's few
// miss buffers until its line arrives, so the prefetches and the loads of the tile's own data queue
// behind each other, and the call took the time of its reads plus its arithmetic instead of the
// larger of the two ([8192, 3072] BF16 at 8 tokens: 2.34-2.38 ms against 2.03-2.14 into L2;
// docs/cpu-kernels.md "Software prefetch into L1 or L2"); on the Zen 5 guest L2 was level one day
// and 9% faster over the same benchmark's cells another. No output changes a bit with the target.
#pragma once

#include <xmmintrin.h>

namespace speclab {

enum class SegmentPrefetch { kToL1, kToL2 };

// What one register tile issues: no prefetch (rows read whole, which the hardware prefetcher
// follows), or the next segment's lines into L1 or into L2.
enum class TilePrefetch { kNone, kToL1, kToL2 };

constexpr TilePrefetch tile_prefetch(SegmentPrefetch to) {
  return to == SegmentPrefetch::kToL2 ? TilePrefetch::kToL2 : TilePrefetch::kToL1;
}

// The cache line at p, as P says (nothing for kNone).
template <TilePrefetch P>
__attribute__((always_inline)) inline void prefetch_line(const void* p) {
  if constexpr (P == TilePrefetch::kToL1) {
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
  } else if constexpr (P == TilePrefetch::kToL2) {
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1);
  }
}

}  // namespace speclab
