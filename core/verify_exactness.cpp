#include "core/verify_exactness.h"

#include <algorithm>

#include "core/error.h"
#include "core/sampling.h"

namespace speclab {

std::vector<double> exactness_first_token_law(const float* p, const float* q, int64_t vocab,
                                              double l) {
  const double a = verify_accept_prob(p, q, vocab, l);
  const double z = 1.0 / l - a;  // residual mass of p/l - q
  std::vector<double> law(vocab);
  for (int64_t x = 0; x < vocab; x++) {
    const double pl = p[x] / l;
    law[x] =
        std::min<double>(q[x], pl) + (z > 0.0 ? (1.0 - a) / z : 0.0) * std::max(0.0, pl - q[x]);
  }
  return law;
}

ExactnessReport exactness_check(const VerifierFn& verifier, const ExactnessCase& c,
                                const VerifyConfig& config, int64_t n_trials, uint64_t seed,
                                double alpha) {
  const int k = c.n_draft;
  const int64_t V = c.vocab;
  const int64_t n_pos = k + 2;
  SPECLAB_INPUT_CHECK(!config.greedy, "exactness_check: sampling mode only");
  SPECLAB_INPUT_CHECK(k >= 1 && V > 0 && static_cast<int64_t>(c.p.size()) == n_pos * V &&
                          static_cast<int64_t>(c.q.size()) == n_pos * V,
                      "exactness_check: case '", c.name, "' needs p and q of shape [", n_pos, ", ",
                      V, "]");

  ExactnessReport rep;
  rep.first_counts.assign(V, 0);
  std::vector<int64_t> joint_counts(V * V, 0);  // [first, second]
  std::vector<double> accepted(n_trials);
  std::vector<int32_t> draft(k);

  // One round starting at absolute position `start`; returns the emitted tokens.
  auto run_round = [&](uint64_t trial, int start, std::vector<int32_t>& emitted) {
    const RngKey base{seed, trial, static_cast<uint64_t>(start), 0, 0};
    for (int i = 0; i < k; i++) {
      const float* q_i = c.q.data() + (start + i) * V;
      draft[i] = sampling_draw(q_i, V, rng_uniform(rng_key_at(base, start + i, kRngDraftSample)));
    }
    VerifyRound r;
    r.n_draft = k;
    r.draft = draft.data();
    r.q = c.deterministic_drafter ? nullptr : c.q.data() + start * V;
    r.p = c.p.data() + start * V;
    r.vocab = V;
    const VerifyOutcome o = verifier(r, config, base);
    SPECLAB_ASSERT(o.n_accepted >= 0 && o.n_accepted <= k);
    SPECLAB_ASSERT(o.next_token >= 0 && o.next_token < V);
    emitted.assign(draft.begin(), draft.begin() + o.n_accepted);
    emitted.push_back(o.next_token);
    return o.n_accepted;
  };

  std::vector<int32_t> emitted, emitted2;
  for (int64_t t = 0; t < n_trials; t++) {
    accepted[t] = run_round(t, 0, emitted);
    int32_t second;
    if (emitted.size() >= 2) {
      second = emitted[1];
    } else {
      run_round(t, 1, emitted2);
      second = emitted2[0];
    }
    rep.first_counts[emitted[0]]++;
    joint_counts[emitted[0] * V + second]++;
  }

  rep.first_law = exactness_first_token_law(c.p.data(), c.q.data(), V, config.lenience);
  rep.first = stats_chi2_gof(rep.first_counts, rep.first_law);
  if (config.lenience == 1.0) {
    std::vector<double> joint_law(V * V);
    for (int64_t a = 0; a < V; a++)
      for (int64_t b = 0; b < V; b++) joint_law[a * V + b] = double(c.p[a]) * c.p[V + b];
    rep.joint = stats_chi2_gof(joint_counts, joint_law);
  }
  std::vector<double> accept_prob(k);
  for (int i = 0; i < k; i++) {
    accept_prob[i] = verify_accept_prob(c.p.data() + i * V, c.q.data() + i * V, V, config.lenience);
  }
  rep.expected_accepted = verify_expected_accepted(accept_prob);
  rep.mean_accepted = stats_mean(accepted);
  rep.accepted_interval = stats_mean_interval(accepted, alpha);
  return rep;
}

}  // namespace speclab
