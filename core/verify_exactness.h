// Statistical check that a speculative verifier emits tokens with the target's law.
//
// The model is "context-free": the target and the drafter have a fixed distribution per
// absolute position, p[pos] and q[pos], whatever the prefix. Then exact speculative
// decoding must emit token t_pos ~ p[pos] independently at every position. One trial:
//   round 1 at position 0: drafts d_i ~ q[i] (i < gamma, counter RNG), verify against
//            p[0..gamma];
//   if it emitted only one token, round 2 at position 1 (drafts from q[1..gamma],
//            p[1..gamma+1]) supplies the second.
// The first emitted token is tested against p[0], the pair (first, second) against
// p[0] x p[1], and the number of drafts accepted in round 1 against the closed form
// sum_j prod_{i<=j} alpha_i (alpha_i = sum_x min(q_i(x), p_i(x)/l), paper A.5 / Cor. 3.6).
//
// A wrong verifier (residual from p, unnormalized residual, accept without q, ...) shifts
// these laws; tests/core/test_speculative_verify.cpp shows it is caught.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/speculative_verify.h"
#include "core/stats.h"

namespace speclab {

using VerifierFn = std::function<VerifyOutcome(const VerifyRound&, const VerifyConfig&, RngKey)>;

struct ExactnessCase {
  std::string name;
  int64_t vocab = 0;
  int n_draft = 1;                     // gamma >= 1
  std::vector<float> p;                // [n_draft + 2, vocab] target law per position
  std::vector<float> q;                // [n_draft + 2, vocab] draft law per position
  bool deterministic_drafter = false;  // q rows are one-hot; the verifier gets q = nullptr
};

struct ExactnessReport {
  std::vector<int64_t> first_counts;  // [vocab] first emitted token
  std::vector<double> first_law;      // [vocab] its expected law
  GofResult first;                    // chi-square of first_counts vs first_law
  GofResult joint;                    // chi-square of (first, second) vs p[0] x p[1]; l = 1 only
  double mean_accepted = 0.0;         // drafts accepted in round 1, averaged over trials
  Interval accepted_interval;         // its normal interval at level 1 - alpha
  double expected_accepted = 0.0;     // closed form
};

// Law of the first emitted token of a round with gamma >= 1 and lenience l (see
// core/speculative_verify.h): min(q, p/l) + (1 - a_l) / (1/l - a_l) * max(0, p/l - q),
// a_l = sum_x min(q, p/l). Equals p when l = 1.
std::vector<double> exactness_first_token_law(const float* p, const float* q, int64_t vocab,
                                              double lenience);

// Runs n_trials trials (sampling mode; config.greedy must be false) with the counter RNG
// seeded by seed; alpha sets the level of accepted_interval.
ExactnessReport exactness_check(const VerifierFn& verifier, const ExactnessCase& c,
                                const VerifyConfig& config, int64_t n_trials, uint64_t seed,
                                double alpha);

}  // namespace speclab
