#include "core/speculative_verify.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/sampling.h"

namespace speclab {

double verify_expected_acceptance(const float* p, const float* q, int64_t vocab, double lenience) {
  double a = 0.0;
  for (int64_t x = 0; x < vocab; x++) a += std::min<double>(q[x], p[x] / lenience);
  return a;
}

void verify_lenient_law(const float* p, const float* q, int64_t vocab, double l, double* out) {
  const double a = verify_expected_acceptance(p, q, vocab, l);
  const double z = 1.0 / l - a;  // mass of max(0, p/l - q), the residual's normalizer
  for (int64_t x = 0; x < vocab; x++) {
    const double pl = p[x] / l;
    out[x] =
        std::min<double>(q[x], pl) + (z > 0.0 ? (1.0 - a) / z : 0.0) * std::max(0.0, pl - q[x]);
  }
}

double verify_lenient_tv(const float* p, const float* q, int64_t vocab, double lenience) {
  std::vector<double> law(static_cast<size_t>(vocab));  // [vocab]
  verify_lenient_law(p, q, vocab, lenience, law.data());
  double tv = 0.0;
  for (int64_t x = 0; x < vocab; x++) tv += std::abs(law[x] - p[x]);
  return 0.5 * tv;
}

bool verify_greedy_lenient_accepts(const float* p_raw, int64_t vocab, int32_t x, double lenience) {
  SPECLAB_ASSERT(x >= 0 && x < vocab);
  const float best = *std::max_element(p_raw, p_raw + vocab);
  return p_raw[x] >= lenience * best;
}

double verify_expected_accepted(const std::vector<double>& accept_prob) {
  double reach = 1.0, expected = 0.0;
  for (double a : accept_prob) {
    reach *= a;  // P(positions 0..j all accepted)
    expected += reach;
  }
  return expected;
}

namespace {

void verify_check_round(const VerifyRound& r) {
  SPECLAB_INPUT_CHECK(r.n_draft >= 0, "speculative_verify: n_draft must be >= 0, got ", r.n_draft);
  SPECLAB_INPUT_CHECK(r.vocab > 0, "speculative_verify: vocab must be > 0, got ", r.vocab);
  SPECLAB_INPUT_CHECK(r.p != nullptr, "speculative_verify: p is null");
  SPECLAB_INPUT_CHECK(r.n_draft == 0 || r.draft != nullptr, "speculative_verify: draft is null");
}

// Per-position diagnostics p_i(d_i), q_i(d_i), beta_i, for every drafted position (also past
// a rejection).
void verify_fill_diagnostics(const VerifyRound& r, VerifyOutcome* out) {
  const int64_t V = r.vocab;
  out->p_draft.resize(r.n_draft);
  out->q_draft.resize(r.n_draft);
  out->beta.resize(r.n_draft);
  for (int i = 0; i < r.n_draft; i++) {
    const int32_t d = r.draft[i];
    SPECLAB_INPUT_CHECK(d >= 0 && d < V, "speculative_verify: draft[", i, "] = ", d,
                        " outside the vocabulary [0, ", V, ")");
    const float* p_i = r.p + i * V;
    out->p_draft[i] = p_i[d];
    if (r.q) {
      const float* q_i = r.q + i * V;
      out->q_draft[i] = q_i[d];
      double b = 0.0;
      for (int64_t x = 0; x < V; x++) b += std::min(p_i[x], q_i[x]);
      out->beta[i] = static_cast<float>(b);
    } else {
      out->q_draft[i] = 1.0f;  // one-hot q at d
      out->beta[i] = p_i[d];   // sum_x min(p(x), [x == d]) = p(d)
    }
  }
}

}  // namespace

VerifyOutcome speculative_verify(const VerifyRound& r, const VerifyConfig& cfg, RngKey base) {
  verify_check_round(r);
  SPECLAB_INPUT_CHECK(cfg.lenience > 0.0 && cfg.lenience <= 1.0,
                      "speculative_verify: lenience must lie in (0, 1], got ", cfg.lenience);
  const double l = cfg.lenience;
  const int64_t V = r.vocab;

  VerifyOutcome out;
  verify_fill_diagnostics(r, &out);

  if (cfg.greedy) {
    SPECLAB_INPUT_CHECK(l == 1.0 || r.n_draft == 0 || r.p_raw != nullptr,
                        "speculative_verify: greedy lenience needs the target's distribution "
                        "before standardization (p_raw)");
    int i = 0;
    for (; i < r.n_draft; i++) {
      const float* p_i = r.p + i * V;
      const int32_t best = sampling_argmax(p_i, V);
      const int32_t d = r.draft[i];
      // strict: d is the target's argmax. lenient (l < 1): d is within a factor l of the
      // most likely token of the raw (unstandardized) distribution.
      const bool accept =
          d == best || (l < 1.0 && verify_greedy_lenient_accepts(r.p_raw + i * V, V, d, l));
      if (!accept) break;
    }
    out.n_accepted = i;
    out.bonus = i == r.n_draft;
    out.next_token = sampling_argmax(r.p + i * V, V);
    return out;
  }

  for (int i = 0; i < r.n_draft; i++) {
    const uint64_t pos = base.position + i;
    const float* p_i = r.p + i * V;
    const int32_t d = r.draft[i];
    const double p_d = out.p_draft[i];
    const double q_d = out.q_draft[i];
    SPECLAB_INPUT_CHECK(q_d > 0.0, "speculative_verify: draft[", i, "] = ", d,
                        " has q = 0 at its position; it cannot have been sampled from q");
    // accept iff u < min(1, p(d) / (l q(d)))  <=>  u * l * q(d) < p(d)   (u in [0, 1)).
    // l q(d) <= p(d): always accepted; p(d) = 0: never.
    const double u = rng_uniform(rng_key_at(base, pos, kRngAcceptTest));
    if (u * l * q_d < p_d) continue;

    // Rejected at i: emit x ~ norm(max(0, p_i - l q_i)) (the residual keeps exactly the
    // mass of p that the accept step under-delivers). sampling_draw normalizes.
    out.n_accepted = i;
    std::vector<float> residual(V);  // [vocab]
    bool any = false;
    for (int64_t x = 0; x < V; x++) {
      const double qx = r.q ? r.q[i * V + x] : (x == d ? 1.0 : 0.0);
      const double m = std::max(0.0, p_i[x] - l * qx);
      residual[x] = static_cast<float>(m);
      any = any || residual[x] > 0.0f;
    }
    // Zero residual mass only happens when p_i == q_i up to rounding (a rejection is then
    // a rounding event): p_i itself is the right law.
    const float* law = any ? residual.data() : p_i;
    out.next_token = sampling_draw(law, V, rng_uniform(rng_key_at(base, pos, kRngResidualSample)));
    return out;
  }

  // All gamma drafts accepted: bonus token from the target's extra position.
  out.n_accepted = r.n_draft;
  out.bonus = true;
  out.next_token =
      sampling_draw(r.p + r.n_draft * V, V,
                    rng_uniform(rng_key_at(base, base.position + r.n_draft, kRngBonusSample)));
  return out;
}

double verify_synthetic_prob_at(const std::vector<double>& accept_prob, int i) {
  SPECLAB_ASSERT(!accept_prob.empty() && i >= 0);
  return accept_prob[std::min(static_cast<size_t>(i), accept_prob.size() - 1)];
}

VerifyOutcome speculative_verify_synthetic(const VerifyRound& r,
                                           const std::vector<double>& accept_prob, bool greedy,
                                           RngKey base) {
  verify_check_round(r);
  SPECLAB_INPUT_CHECK(!accept_prob.empty(),
                      "speculative_verify_synthetic: accept_prob is empty (expected values in "
                      "(0, 1])");
  for (size_t i = 0; i < accept_prob.size(); i++)
    SPECLAB_INPUT_CHECK(accept_prob[i] > 0.0 && accept_prob[i] <= 1.0,
                        "speculative_verify_synthetic: accept_prob[", i, "] = ", accept_prob[i],
                        " (expected a number in (0, 1])");
  const int64_t V = r.vocab;
  VerifyOutcome out;
  verify_fill_diagnostics(r, &out);  // the same host work and records as the exact verifier

  for (int i = 0; i < r.n_draft; i++) {
    const uint64_t pos = base.position + i;
    // Bernoulli(accept_prob_i) from its own stream, independent of p, q and the draft.
    const double u = rng_uniform(rng_key_at(base, pos, kRngSynthAccept));
    if (u < verify_synthetic_prob_at(accept_prob, i)) continue;
    // Synthetic rejection at i: emit a token of the target's own choice at i, so the text
    // stays plausible (it may equal d_i; the round still ends here, as timed).
    const float* p_i = r.p + i * V;
    out.n_accepted = i;
    out.next_token =
        greedy ? sampling_argmax(p_i, V)
               : sampling_draw(p_i, V, rng_uniform(rng_key_at(base, pos, kRngResidualSample)));
    return out;
  }
  out.n_accepted = r.n_draft;
  out.bonus = true;
  const float* p_bonus = r.p + r.n_draft * V;
  out.next_token =
      greedy ? sampling_argmax(p_bonus, V)
             : sampling_draw(
                   p_bonus, V,
                   rng_uniform(rng_key_at(base, base.position + r.n_draft, kRngBonusSample)));
  return out;
}

}  // namespace speclab
