// The ids that top-k and top-p keep, found without sorting: a radix selection whose
// arithmetic is written once for the host and the device.
//
// sampling_standardize (core/sampling.h) orders a row's candidates by larger logit first,
// ties to the lower id, and keeps a prefix of that order: the first k (top-k), then the
// shortest prefix whose weight reaches top_p of the mass top-k kept (top-p). With a 32-bit
// key that orders the logits (a smaller key is a larger logit, equal logits equal keys),
// every such prefix is
//   { i : key(i) < T }  and  the first `take` ids, in id order, of { i : key(i) == T }
// for one threshold key T. T is found 8 bits at a time from the top (a most-significant-digit
// radix select, the selection behind the top-k of Alabi et al. 2012, "Fast k-selection
// algorithms for graphics processing units"): a pass histograms the candidates whose key
// agrees with the digits fixed so far by their next digit, and the first bucket where the
// running count (top-k) or mass (top-p) reaches the target fixes that digit. Four passes fix
// all 32 bits; the ties at T then all have the same logit, hence the same weight, so the
// number of them to take follows by integer division.
//
// Masses are fixed-point integers, weight x 2^s with s = 62 - ceil(log2 vocab) (a row's
// weights are at most 1, so any sum of them fits in 63 bits), so a histogram's sums do not
// depend on the order its atomics land: a row's set never depends on scheduling or on the
// other rows. The boundary can differ from the CPU's double prefix sum only where that sum
// lies within about vocab x 2^-s (3.6e-9 for 128,256 ids) of the need.
//
// tests/cuda/test_cuda_top_set.cpp runs the same steps on the host with these functions and
// checks the sets against sampling_standardize; core/cuda/cuda_top_set.cu runs them on the
// device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SPECLAB_TOP_SET_HD __host__ __device__
#else
#define SPECLAB_TOP_SET_HD
#endif

namespace speclab {

constexpr int kCudaTopDigitBits = 8;
constexpr int kCudaTopBuckets = 1 << kCudaTopDigitBits;  // 256
constexpr int kCudaTopPasses = 32 / kCudaTopDigitBits;   // 4

// The key of a logit: smaller for larger logits; -0 and +0 (equal logits) share a key. NaN is
// outside sampling_standardize's contract. -inf has the largest key of a logit (0xFF800000).
SPECLAB_TOP_SET_HD inline uint32_t cuda_top_key(float logit) {
  if (logit == 0.0f) logit = 0.0f;  // -0 -> +0
#if defined(__CUDA_ARCH__)
  const uint32_t u = __float_as_uint(logit);
#else
  uint32_t u;
  std::memcpy(&u, &logit, sizeof(u));
#endif
  const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return ~ascending;
}

// The logit of a key (the inverse of cuda_top_key; -0 comes back as +0).
SPECLAB_TOP_SET_HD inline float cuda_top_key_logit(uint32_t key) {
  const uint32_t ascending = ~key;
  const uint32_t u = (ascending & 0x80000000u) ? (ascending & 0x7FFFFFFFu) : ~ascending;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float logit;
  std::memcpy(&logit, &u, sizeof(logit));
  return logit;
#endif
}

// The unnormalized weight exp((logit - max) / T) in double: the expression of
// sampling_standardize and of the device's temperature kernels, so every path agrees on it.
SPECLAB_TOP_SET_HD inline double cuda_top_weight(float logit, float max_logit, double inv_t) {
  return exp((static_cast<double>(logit) - static_cast<double>(max_logit)) * inv_t);
}

// weight (in [0, 1]) as a fixed-point integer: weight x scale rounded half up, scale = 2^s.
SPECLAB_TOP_SET_HD inline uint64_t cuda_top_fixed(double weight, double scale) {
  return static_cast<uint64_t>(weight * scale + 0.5);
}

// s of the fixed-point scale 2^s for a row of `vocab` weights: 62 - ceil(log2 vocab).
inline int cuda_top_mass_shift(int64_t vocab) {
  int bits = 0;
  while ((int64_t{1} << bits) < vocab) bits++;
  return 62 - bits;
}

// One selection's state (per row), all zero before its first pass.
struct CudaTopSelect {
  uint32_t prefix;  // the key digits fixed so far (after the last pass: T)
  uint32_t mask;    // which bits of the key they are
  uint64_t below;   // count or mass of the candidates with keys below the prefix's range
  uint64_t target;  // the count (k) or mass (the need) to reach; set by the first pass
  uint64_t take;    // after the last pass: how many ids of key T, in id order, are kept
};

SPECLAB_TOP_SET_HD inline int cuda_top_shift(int pass) {
  return 32 - kCudaTopDigitBits * (pass + 1);
}

// Whether a candidate's key lies in the range the pass histograms, and its bucket there.
SPECLAB_TOP_SET_HD inline bool cuda_top_in_range(uint32_t key, const CudaTopSelect& s) {
  return (key & s.mask) == s.prefix;
}
SPECLAB_TOP_SET_HD inline int cuda_top_digit(uint32_t key, int pass) {
  return static_cast<int>((key >> cuda_top_shift(pass)) & (kCudaTopBuckets - 1));
}

// The mass top-p needs out of `total`: ceil(top_p x total), at least 1, at most total
// (sampling_standardize: the prefix's mass >= top_p x kept mass, at least one id).
SPECLAB_TOP_SET_HD inline uint64_t cuda_top_need(uint64_t total, float top_p) {
  const double want = ceil(static_cast<double>(total) * static_cast<double>(top_p));
  uint64_t need = want >= static_cast<double>(total) ? total : static_cast<uint64_t>(want);
  return need < 1 ? 1 : need;
}

// Fixes the pass's digit from its histogram hist[kCudaTopBuckets] of the in-range candidates:
// the first bucket where below + the buckets' running sum reaches the target. The last pass
// leaves prefix = T and `below` the count or mass of the keys below T; the caller then sets
// take (cuda_top_count_take or cuda_top_mass_take).
SPECLAB_TOP_SET_HD inline void cuda_top_pick(CudaTopSelect* s, const uint64_t* hist, int pass) {
  uint64_t run = s->below;
  int b = 0;
  int last_filled = 0;
  for (; b < kCudaTopBuckets; b++) {
    if (hist[b] == 0) continue;
    last_filled = b;
    if (run + hist[b] >= s->target) break;
    run += hist[b];
  }
  // Unreachable while the target is at most the in-range total (every caller's invariant):
  // keep the last filled bucket rather than a key no candidate has.
  if (b == kCudaTopBuckets) {
    b = last_filled;
    run -= hist[b];
  }
  const int shift = cuda_top_shift(pass);
  s->prefix |= static_cast<uint32_t>(b) << shift;
  s->mask |= static_cast<uint32_t>(kCudaTopBuckets - 1) << shift;
  s->below = run;
}

// Top-k's take after the last pass: the ids of key T still needed to reach k.
SPECLAB_TOP_SET_HD inline uint64_t cuda_top_count_take(const CudaTopSelect& s) {
  return s.target - s.below;
}

// Top-p's take after the last pass: the ties at T all weigh w_t (fixed point), so
// ceil((need - below) / w_t) of them reach the need (at least 1).
SPECLAB_TOP_SET_HD inline uint64_t cuda_top_mass_take(const CudaTopSelect& s, uint64_t w_t) {
  const uint64_t rem = s.target - s.below;
  if (w_t == 0) return 1;  // unreachable: the bucket that reached the need had mass
  const uint64_t take = (rem + w_t - 1) / w_t;
  return take < 1 ? 1 : take;
}

// Top-p after top-k: a candidate is one top-k kept. Those with keys below top-k's T count in
// the histograms as they are; of the ties at top-k's T only top-k's take are kept, which a
// histogram pass cannot tell apart (their rank is by id), so they are left out there and
// added (cuda_top_p_add_top_k_ties), take_k x their weight w_k, to the bucket of top-k's T
// while it is in range. So a top-p histogram counts the keys below this bound: top-k's T
// after top-k, else all (every logit's key is below 0xFFFFFFFF).
SPECLAB_TOP_SET_HD inline uint32_t cuda_top_p_key_bound(const CudaTopSelect* k) {
  return k == nullptr ? 0xFFFFFFFFu : k->prefix;
}
SPECLAB_TOP_SET_HD inline bool cuda_top_p_histograms(uint32_t key, uint32_t bound) {
  return key < bound;
}
SPECLAB_TOP_SET_HD inline void cuda_top_p_add_top_k_ties(uint64_t* hist, const CudaTopSelect& p,
                                                         const CudaTopSelect& k, uint64_t w_k,
                                                         int pass) {
  if (cuda_top_in_range(k.prefix, p)) hist[cuda_top_digit(k.prefix, pass)] += k.take * w_k;
}

// Whether id i is kept, given its key and its rank (0-based, in id order) among the ids of
// key T.
SPECLAB_TOP_SET_HD inline bool cuda_top_kept(uint32_t key, uint64_t tie_rank,
                                             const CudaTopSelect& s) {
  return key < s.prefix || (key == s.prefix && tie_rank < s.take);
}

}  // namespace speclab
