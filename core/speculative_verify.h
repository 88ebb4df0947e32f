// Verification of one speculative round: Leviathan, Kalman, Matias (ICML 2023),
// Algorithm 1, on distributions that are already standardized (core/sampling.h).
//
// Given gamma = n_draft drafted ids d_0..d_{gamma-1}, the draft distributions q_i they were
// sampled from and the target distributions p_0..p_gamma from one target pass:
//   for i = 0..gamma-1:  accept d_i with probability min(1, p_i(d_i) / (l q_i(d_i)));
//                        on the first rejection emit x ~ norm(max(0, p_i - l q_i)) and stop;
//   all accepted:        emit the bonus x ~ p_gamma.
// So every round emits n_accepted + 1 >= 1 tokens. With lenience l = 1 the emitted tokens
// are distributed exactly as sampling from p (Theorem 3.5 / Appendix A.1).
//
// Lenience (paper Appendix A.5): "multiply q(x) by l before comparing with p(x)", l in
// (0, 1]. The paper gives the accept rule and alpha_l = sum_x min(p(x)/l, q(x)); it does
// not write out the residual. We use the one that makes the step exact for the
// unnormalized target p/l, namely norm(max(0, p/l - q)) = norm(max(0, p - l q)). The first
// emitted token then has the law
//   P(x) = min(q(x), p(x)/l) + (1 - alpha_l) / (1/l - alpha_l) * max(0, p(x)/l - q(x)),
// which is <= p(x)/l: "no token is sampled with more than 1/l times its probability".
// tests/core/test_speculative_verify.cpp checks this law statistically.
//
// Greedy (target temperature 0): accept d_i while d_i == argmax p_i (ties -> lowest id);
// the next token is argmax p at the first mismatch, or at position gamma. Greedy lenience
// (A.5, last paragraph, with the inequality in its evident direction): also accept d_i when
// p_raw_i(d_i) >= l * max p_raw_i, where p_raw is the target's distribution BEFORE
// standardization (softmax of the raw logits at temperature 1). Applied to the standardized
// p, which is one-hot at temperature 0, the rule could never accept anything but the argmax,
// so lenience would silently do nothing. With l = 1 only the argmax rule applies, so l = 1
// is exactly the strict algorithm. Greedy draws no random numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace speclab {

struct VerifyConfig {
  bool greedy = false;    // target temperature 0
  double lenience = 1.0;  // l in (0, 1]; 1 = exact
};

// Whether a round may be verified where the target's logits are (TokenRunner::verify_on_device,
// a GPU runner): not under synthetic acceptance (a timing mode whose coins the host draws) nor
// greedy lenience < 1 (its rule reads the softmax of the raw logits, which the device round
// does not compute). The decoder asks it before each round, the predictor to price the round.
inline bool verify_may_run_on_device(bool synthetic_acceptance, const VerifyConfig& config) {
  return !synthetic_acceptance && !(config.greedy && config.lenience < 1.0);
}

struct VerifyRound {
  int n_draft = 0;                 // gamma
  const int32_t* draft = nullptr;  // [n_draft] proposed ids
  const float* q = nullptr;        // [n_draft, vocab] draft distributions (standardized), or
                                   // nullptr = deterministic drafter (one-hot at draft[i])
  const float* p = nullptr;        // [n_draft + 1, vocab] target distributions (standardized)
  int64_t vocab = 0;
  // [n_draft, vocab] softmax of the target's raw logits at temperature 1, needed only by
  // greedy lenience (greedy with l < 1: InputError when null); ignored otherwise.
  const float* p_raw = nullptr;
};

struct VerifyOutcome {
  int n_accepted = 0;       // 0..n_draft
  int32_t next_token = -1;  // the correction (residual) token, or the bonus token
  bool bonus = false;       // all drafts accepted; next_token came from p[n_draft]
  // Per drafted position i < n_draft, computed for every position even after a rejection
  // (they feed the alpha estimate of Corollary 3.6):
  std::vector<float> p_draft;  // [n_draft] p_i(d_i)
  std::vector<float> q_draft;  // [n_draft] q_i(d_i) (1 for a deterministic drafter)
  std::vector<float> beta;     // [n_draft] sum_x min(p_i(x), q_i(x))  (strict, l = 1)
};

// base: seed and request of the sequence, position = absolute position of the first
// drafted token. Random numbers are keyed by (base.position + i, stream) with streams
// kRngAcceptTest, kRngResidualSample, kRngBonusSample (core/rng.h), so the outcome does
// not depend on anything but the inputs and the key.
// Throws InputError on bad shapes, lenience outside (0, 1], or a draft id that is out
// of range or has q_i(d_i) = 0 (it could not have been sampled from q_i).
VerifyOutcome speculative_verify(const VerifyRound& round, const VerifyConfig& config, RngKey base);

// Synthetic acceptance (for timing the cost model at a known alpha; NOT exact sampling):
// the same inputs as speculative_verify, but draft i is accepted with the configured
// probability accept_prob[i] (the last value repeats for later positions) given that it is
// reached, whatever p and q say:
//   accept d_i iff u_i < accept_prob[min(i, size - 1)],  u_i keyed (base.position + i,
//                                                        kRngSynthAccept);
//   first rejection at i: emit x ~ p_i (argmax p_i when greedy), u keyed kRngResidualSample;
//   all accepted:         the bonus exactly as speculative_verify (x ~ p_gamma or argmax).
// The emitted text is therefore plausible under the target but its law is NOT the target's:
// accepted drafts follow q, and a "rejected" draft may even be the token that replaces it.
// p_draft, q_draft and beta are filled as speculative_verify does, so records still carry
// the pair's natural acceptance (Corollary 3.6) beside the configured one.
// Throws InputError on bad shapes, an empty accept_prob or a value outside (0, 1].
VerifyOutcome speculative_verify_synthetic(const VerifyRound& round,
                                           const std::vector<double>& accept_prob, bool greedy,
                                           RngKey base);

// The configured acceptance probability of draft position i (0-based): accept_prob[i], or the
// last value for i beyond the list. Needs a non-empty list.
double verify_synthetic_prob_at(const std::vector<double>& accept_prob, int i);

// Expected number of accepted drafts of one round when position i is accepted with
// probability accept_prob[i] independently given that it is reached:
//   E[n_accepted] = sum_{j=0}^{gamma-1} prod_{i<=j} accept_prob[i].
// With accept_prob[i] = alpha for all i this is alpha (1 - alpha^gamma) / (1 - alpha), and
// the tokens per round E[n_accepted] + 1 is the paper's Eq. (1), (1 - alpha^(gamma+1)) / (1 -
// alpha).
double verify_expected_accepted(const std::vector<double>& accept_prob);

// Acceptance probability of one position in sampling mode with lenience l:
//   alpha_l = sum_x min(q(x), p(x) / l)  (paper A.5; l = 1 gives Corollary 3.6's beta).
// p, q: [vocab] standardized.
double verify_expected_acceptance(const float* p, const float* q, int64_t vocab, double lenience);

// Law of the one token that lenient verification emits at a drafted position (accepted
// draft or residual), d ~ q:
//   P(x) = min(q(x), p(x)/l) + (1 - alpha_l) / (1/l - alpha_l) * max(0, p(x)/l - q(x)),
// which equals p when l = 1. out: [vocab].
void verify_lenient_law(const float* p, const float* q, int64_t vocab, double lenience,
                        double* out);

// Total-variation distance between that law and p: 1/2 sum_x |P(x) - p(x)|, the quality
// cost of lenience at one position (0 at l = 1).
double verify_lenient_tv(const float* p, const float* q, int64_t vocab, double lenience);

// The greedy lenient rule (A.5) on the target's distribution before standardization:
// p_raw(x) >= l * max_y p_raw(y). p_raw: [vocab]. With l = 1 it accepts the argmax and
// exact ties only (the verifier uses it for l < 1 alone, so l = 1 stays the strict rule).
bool verify_greedy_lenient_accepts(const float* p_raw, int64_t vocab, int32_t x, double lenience);

}  // namespace speclab
