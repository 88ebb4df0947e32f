// Counter-based random numbers: a draw is a pure function of its key.
//
// Speculative decoding consumes random numbers at places that depend on what was
// accepted (accept tests, residual draws, bonus draws). A sequential generator would
// make every later draw depend on how many earlier ones happened, on call order and on
// thread count. Here each uniform is Philox4x32-10 (Salmon et al., SC'11, "Parallel
// random numbers: as easy as 1, 2, 3") applied to a counter built from the key, so
//   u = f(seed, request, position, stream, index)
// and the same (seed, request, position, stream) always gives the same number, no matter
// which rounds, threads or batch layout came before.
//
// Layout of one Philox call:
//   key[2]     = splitmix64(seed ^ splitmix64(request))   (64 bits: the stream of one request)
//   counter[4] = {position lo, position hi, stream, index}
// Two different (seed, request) pairs collide on the key with probability 2^-64.
#pragma once

#include <array>
#include <cstdint>

namespace speclab {

// Who consumes a draw. Each consumer has its own stream so that, for example, the
// accept test at position t never reuses the number that sampled the draft at t.
enum RngStream : uint32_t {
  kRngDraftSample = 1,     // drafter samples d_t ~ q_t
  kRngAcceptTest = 2,      // u_t in the accept test u_t < p(d_t) / (l q(d_t))
  kRngResidualSample = 3,  // correction token ~ norm(max(0, p_t - l q_t)) after a rejection
  kRngTargetSample = 4,    // plain (non-speculative) decoding from p_t
  kRngBonusSample = 5,     // bonus token ~ p_{t+gamma} when every draft was accepted
  kRngBootstrap = 6,       // statistics: bootstrap resampling
  kRngTest = 7,            // tests and Monte Carlo simulations
  kRngSynthAccept = 8,     // synthetic acceptance: u_t < the configured accept probability at t
  kRngLawCheck = 9,        // the in-run law check's PIT randomization v_t (core/law_check.h);
                           // no decoding decision reads it, so outputs do not depend on it
  kRngProfileStride = 10,  // a strided acceptance profile's first measured position per prompt
};

struct RngKey {
  uint64_t seed = 0;
  uint64_t request = 0;   // which request / sequence in a batch
  uint64_t position = 0;  // absolute token position the draw belongs to
  uint32_t stream = 0;    // an RngStream
  uint32_t index = 0;     // several draws for the same (position, stream)
};

// The Philox4x32 block function with 10 rounds, as in Random123 (philox4x32_R(10, ...)).
std::array<uint32_t, 4> rng_philox4x32_10(std::array<uint32_t, 4> counter,
                                          std::array<uint32_t, 2> key);

// 64 uniformly random bits for the key.
uint64_t rng_bits64(const RngKey& key);

// Uniform double in [0, 1) with 53-bit resolution: k * 2^-53, k uniform in [0, 2^53).
double rng_uniform(const RngKey& key);

// Convenience: the same key with another position / stream / index.
inline RngKey rng_key_at(RngKey base, uint64_t position, uint32_t stream, uint32_t index = 0) {
  base.position = position;
  base.stream = stream;
  base.index = index;
  return base;
}

}  // namespace speclab
