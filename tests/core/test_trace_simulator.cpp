// Monte Carlo and replay against the closed forms of core/speedup_theory.h. Tolerances are stated
// in standard errors (batch means, see SimResult); each check is a fixed-seed draw, so a failure
// is reproducible, and a correct simulator passes a 3-SE check with probability ~0.997.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/speedup_theory.h"
#include "core/trace_simulator.h"

namespace speclab {
namespace {

PolicySpec fixed(int g) { return PolicySpec{PolicyKind::kFixed, g}; }

TEST(TraceSimulator, IidMatchesEq1AndTheorem38) {
  uint64_t seed = 11;
  for (double a : {0.3, 0.6, 0.8, 0.95}) {
    for (int g : {1, 3, 7}) {
      const double c = 0.05;
      const SimResult r = simulate_iid(a, c, fixed(g), 40000, seed++);
      const double E = theory_expected_tokens(a, g);
      EXPECT_NEAR(r.tokens_per_round, E, 3 * r.tokens_per_round_se) << a << " " << g;
      EXPECT_NEAR(r.speedup, theory_walltime_speedup(a, c, g), 3 * r.speedup_se) << a << " " << g;
      EXPECT_GT(r.tokens_per_round_se, 0.0);
      // The SE is the right size: sd of a capped geometric / sqrt(n), within 25%.
      double m2 = 0;
      for (int k = 0; k <= g; ++k) {
        const double p = k < g ? std::pow(a, k) * (1 - a) : std::pow(a, g);
        m2 += p * (k + 1.0) * (k + 1.0);
      }
      EXPECT_NEAR(r.tokens_per_round_se, std::sqrt((m2 - E * E) / 40000),
                  0.25 * r.tokens_per_round_se);
      EXPECT_EQ(r.drafted, 40000 * g);
      EXPECT_NEAR(r.acceptance, a, 0.02);
    }
  }
}

TEST(TraceSimulator, IidOracleMatchesSection35) {
  for (double a : {0.5, 0.8}) {
    const double c = 0.03;
    const SimResult r = simulate_iid(a, c, PolicySpec{PolicyKind::kOracle, 0}, 40000, 5);
    EXPECT_NEAR(r.tokens_per_round, theory_oracle_expected_tokens(a), 3 * r.tokens_per_round_se);
    EXPECT_NEAR(r.speedup, theory_oracle_speedup(a, c), 3 * r.speedup_se);
    EXPECT_EQ(r.accepted, r.drafted);  // the oracle drafts only what will be accepted
  }
}

TEST(TraceSimulator, HeuristicPolicyRuns) {
  // HF's schedule with alpha 0.9 settles at long drafts; it must beat gamma = 1 (Theorem 3.8).
  const SimResult r = simulate_iid(0.9, 0.0, PolicySpec{PolicyKind::kHeuristic, 5}, 20000, 3);
  EXPECT_GT(r.mean_gamma, 5.0);
  EXPECT_GT(r.speedup, theory_walltime_speedup(0.9, 0.0, 1));
}

TEST(TraceSimulator, MarkovExactReducesToEq1) {
  for (double a : {0.2, 0.7, 0.9})
    for (int g : {1, 4, 9}) {
      const MarkovAcceptance m{a, a, 0.1, 0.3};
      EXPECT_NEAR(markov_expected_tokens(m, g), theory_expected_tokens(a, g), 1e-12);
      EXPECT_NEAR(markov_stationary_alpha(m), a, 1e-15);
    }
  // Stationary acceptance: pi_easy = 0.3 / (0.1 + 0.3) = 0.75.
  const MarkovAcceptance m{0.9, 0.3, 0.1, 0.3};
  EXPECT_NEAR(markov_stationary_alpha(m), 0.75 * 0.9 + 0.25 * 0.3, 1e-15);
}

TEST(TraceSimulator, MarkovMonteCarloMatchesExactAndDiffersFromIid) {
  const MarkovAcceptance m{0.98, 0.2, 0.01, 0.03};  // slow switching: bursty acceptance
  const double alpha = markov_stationary_alpha(m);
  for (int g : {2, 6, 12}) {
    const SimResult r = simulate_markov(m, 0.0, fixed(g), 60000, 21 + g);
    const double exact = markov_expected_tokens(m, g);
    EXPECT_NEAR(r.tokens_per_round, exact, 3 * r.tokens_per_round_se) << g;
    // Correlation matters: Eq. (1) at the stationary alpha overpredicts (3.80 vs 3.39 exact at
    // g = 6, 4.45 vs 3.94 at g = 12), far outside the Monte Carlo noise.
    if (g >= 6) {
      EXPECT_GT(theory_expected_tokens(alpha, g) - r.tokens_per_round, 5 * r.tokens_per_round_se)
          << g;
    }
  }
}

// Outcomes of the hidden chain, one per examined draft.
std::vector<uint8_t> markov_outcomes(const MarkovAcceptance& m, size_t n, uint64_t seed) {
  std::vector<uint8_t> x(n);
  RngKey key{seed, 9, 0, kRngTest, 0};
  bool easy = true;
  for (size_t t = 0; t < n; ++t) {
    const double u = rng_uniform(rng_key_at(key, t, kRngTest, 1));
    easy = easy ? u >= m.p_easy_to_hard : u < m.p_hard_to_easy;
    x[t] = rng_uniform(rng_key_at(key, t, kRngTest, 0)) < (easy ? m.a_easy : m.a_hard);
  }
  return x;
}

TEST(TraceSimulator, MarkovFitRecoversParameters) {
  // 200k outcomes: the switching counts are ~ n pi p = 200k * 5/7 * 0.02 ~ 2900 each, so their
  // relative sampling error is ~2% (more with hidden states); tolerances are ~5x that.
  const MarkovAcceptance truth{0.9, 0.3, 0.02, 0.05};
  const std::vector<uint8_t> x = markov_outcomes(truth, 200000, 4);
  const MarkovFit fit = markov_fit(x);
  EXPECT_TRUE(fit.converged);
  EXPECT_NEAR(fit.model.a_easy, truth.a_easy, 0.02);
  EXPECT_NEAR(fit.model.a_hard, truth.a_hard, 0.03);
  EXPECT_NEAR(fit.model.p_easy_to_hard, truth.p_easy_to_hard, 0.2 * truth.p_easy_to_hard);
  EXPECT_NEAR(fit.model.p_hard_to_easy, truth.p_hard_to_easy, 0.2 * truth.p_hard_to_easy);
  // EM never decreases the likelihood: more iterations cannot end lower.
  const MarkovFit early = markov_fit(x, 3, 0.0);
  EXPECT_LE(early.log_likelihood, fit.log_likelihood);
  EXPECT_EQ(early.iterations, 3);
}

TEST(TraceSimulator, TraceParseAndErrors) {
  const std::string text =
      "{\"n_draft\": 4, \"n_accepted\": 4, \"beta\": [0.9, 0.8, 0.7, 0.6]}\n"
      "\n"
      "{\"n_draft\": 4, \"n_accepted\": 1, \"t_ms\": 3.5}\n";
  const std::vector<RoundTrace> t = trace_parse(text, "t.jsonl");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_TRUE(t[0].censored());
  EXPECT_FALSE(t[1].censored());
  EXPECT_EQ(t[0].beta.size(), 4u);
  EXPECT_NEAR(trace_alpha_beta(t), 0.75, 1e-15);
  EXPECT_NEAR(trace_alpha_mle(t), 5.0 / 6.0, 1e-15);  // 5 accepts, 1 reject
  EXPECT_EQ(trace_outcomes(t), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(trace_parse(trace_format_line(t[0]), "x")[0].beta, t[0].beta);

  struct Bad {
    const char* text;
    const char* needle;
  };
  const Bad bad[] = {
      {"{\"n_draft\": 2, \"n_accepted\": 1}\n\n{\"n_draft\": 2,", "t.jsonl:3: not valid JSON"},
      {"{\"n_draft\": 2, \"n_accepted\": 3}", "t.jsonl:1: 'n_accepted' must lie in [0, n_draft"},
      {"{\"n_accepted\": 0}", "t.jsonl:1: 'n_draft' must be an integer"},
      {"{\"n_draft\": 0, \"n_accepted\": 0}", "'n_draft' must lie in [1"},
      {"{\"n_draft\": 0, \"n_accepted\": 0, \"draft_cap\": 1}", "'n_draft' must lie in [1"},
      {"{\"n_draft\": 3, \"n_accepted\": 1, \"draft_cap\": 2}",
       "t.jsonl:1: 'draft_cap' must lie in [n_draft = 3"},
      {"{\"n_draft\": 3, \"n_accepted\": 1, \"draft_cap\": 2.5}",
       "t.jsonl:1: 'draft_cap' must be an integer"},
      {"{\"n_draft\": 2, \"n_accepted\": 1, \"beta\": [0.5, 1.5]}", "'beta'[1] must be"},
      {"[1, 2]", "t.jsonl:1: expected a JSON object"},
  };
  for (const Bad& b : bad) {
    try {
      trace_parse(b.text, "t.jsonl");
      ADD_FAILURE() << "no error for " << b.text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(b.needle), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(trace_read_file("/nonexistent/trace.jsonl"), InputError);
}

std::vector<RoundTrace> hand_trace() {
  // Recorded with gamma 4: run lengths >=4, 1, 0, >=4, 2.
  std::vector<RoundTrace> t;
  for (int n : {4, 1, 0, 4, 2}) t.push_back(RoundTrace{4, n, {}});
  return t;
}

TEST(TraceSimulator, ReplayHandTrace) {
  const std::vector<RoundTrace> t = hand_trace();
  // Fixed gamma 2 <= 4: exact. Tokens min(L, 2) + 1 = 3, 2, 1, 3, 3.
  SimResult r = trace_replay(t, 0.1, fixed(2), 1);
  EXPECT_EQ(r.tokens, 12);
  EXPECT_EQ(r.imputed_rounds, 0);
  EXPECT_NEAR(r.speedup, 12.0 / (5 * 1.2), 1e-12);
  // Gamma 4 reproduces the recording: tokens n + 1.
  EXPECT_EQ(trace_replay(t, 0.0, fixed(4), 1).tokens, 16);
  // HF heuristic from 2: g = 2 (n 2, all accepted -> 4), 4 (n 1 -> 3), 3 (n 0 -> 2),
  // 2 (n 2 -> 4), 4 (n 2).
  r = trace_replay(t, 0.0, PolicySpec{PolicyKind::kHeuristic, 2}, 1);
  EXPECT_EQ(r.drafted, 2 + 4 + 3 + 2 + 4);
  EXPECT_EQ(r.tokens, 3 + 2 + 1 + 3 + 3);
  EXPECT_EQ(r.imputed_rounds, 0);
  // Gamma 6 > 4 needs the tail of the two censored rounds.
  r = trace_replay(t, 0.0, fixed(6), 1);
  EXPECT_EQ(r.imputed_rounds, 2);
  EXPECT_GE(r.tokens, 16);
  EXPECT_LE(r.tokens, 16 + 2 * 2);
  // Oracle: exact on the three uncensored rounds (1 + 1, 0 + 1, 2 + 1 tokens at cost L c + 1).
  r = trace_replay(t, 0.0, PolicySpec{PolicyKind::kOracle, 0}, 1);
  EXPECT_EQ(r.imputed_rounds, 2);
  EXPECT_EQ(r.accepted, r.drafted);
  EXPECT_GE(r.tokens, 6 + 2 * 5);
}

// Rounds cut below gamma by something other than the policy (budget, context, a drafter that
// proposed fewer) carry draft_cap: replay never drafts past it, so replaying at the recorded
// gamma is exact, and a round with draft_cap 0 (nothing drafted) yields 1 token.
TEST(TraceSimulator, ReplayRespectsDraftCaps) {
  const std::vector<RoundTrace> t = trace_parse(
      "{\"n_draft\": 4, \"n_accepted\": 4, \"draft_cap\": 9}\n"  // censored at gamma
      "{\"n_draft\": 4, \"n_accepted\": 1, \"draft_cap\": 9}\n"
      "{\"n_draft\": 2, \"n_accepted\": 2, \"draft_cap\": 2}\n"  // the drafter ran short
      "{\"n_draft\": 1, \"n_accepted\": 1, \"draft_cap\": 1}\n"  // the budget's last round
      "{\"n_draft\": 0, \"n_accepted\": 0, \"draft_cap\": 0}\n",
      "caps.jsonl");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[4].n_draft, 0);
  EXPECT_EQ(trace_parse(trace_format_line(t[2]), "x")[0].draft_cap, 2);
  // At the recorded gamma 4: tokens n + 1 per round, nothing imputed.
  SimResult r = trace_replay(t, 0.0, fixed(4), 1);
  EXPECT_EQ(r.imputed_rounds, 0);
  EXPECT_EQ(r.tokens, 5 + 2 + 3 + 2 + 1);
  EXPECT_EQ(r.drafted, 4 + 4 + 2 + 1 + 0);
  // At gamma 6 only the first round (censored below its cap) needs a tail.
  r = trace_replay(t, 0.0, fixed(6), 1);
  EXPECT_EQ(r.imputed_rounds, 1);
  EXPECT_EQ(r.drafted, 6 + 6 + 2 + 1 + 0);  // min(6, draft_cap) per round
  // Oracle: capped rounds need no tail either.
  r = trace_replay(t, 0.0, PolicySpec{PolicyKind::kOracle, 0}, 1);
  EXPECT_EQ(r.imputed_rounds, 1);
  // A trace of one round that drafted nothing: alpha_hat is 1 (nothing examined), 1 token.
  const auto empty = trace_parse("{\"n_draft\": 0, \"n_accepted\": 0, \"draft_cap\": 0}", "e");
  EXPECT_EQ(trace_alpha_mle(empty), 1.0);
  EXPECT_EQ(trace_replay(empty, 0.5, fixed(3), 1).tokens, 1);
  EXPECT_EQ(trace_replay(empty, 0.5, fixed(3), 1).speedup, 1.0);
}

TEST(TraceSimulator, ReplayOfIidTraceMatchesTheory) {
  // Record 30000 rounds at gamma 8 from i.i.d. alpha 0.7, then replay other gammas.
  const double a = 0.7;
  std::vector<RoundTrace> t;
  RngKey key{77, 0, 0, kRngTest, 0};
  uint64_t pos = 0;
  for (int i = 0; i < 30000; ++i) {
    int n = 0;
    while (n < 8 && rng_uniform(rng_key_at(key, pos++, kRngTest)) < a) ++n;
    t.push_back(RoundTrace{8, n, {}});
  }
  // alpha_hat: A / (A + R) with n_examined ~ 30000 * E[min(L+1, 8)]: SE ~ sqrt(a(1-a)/n) < 0.003.
  EXPECT_NEAR(trace_alpha_mle(t), a, 0.01);
  for (int g : {1, 3, 8, 12, 20}) {
    const SimResult r = trace_replay(t, 0.0, fixed(g), 5);
    EXPECT_NEAR(r.tokens_per_round, theory_expected_tokens(a, g), 3 * r.tokens_per_round_se) << g;
    EXPECT_EQ(r.imputed_rounds > 0, g > 8);
  }
  const SimResult o = trace_replay(t, 0.02, PolicySpec{PolicyKind::kOracle, 0}, 5);
  EXPECT_NEAR(o.tokens_per_round, theory_oracle_expected_tokens(a), 3 * o.tokens_per_round_se);
  EXPECT_NEAR(o.speedup, theory_oracle_speedup(a, 0.02), 3 * o.speedup_se);
}

TEST(TraceSimulator, BadArguments) {
  EXPECT_THROW(simulate_iid(1.2, 0.0, fixed(2), 10, 1), InputError);
  EXPECT_THROW(simulate_iid(0.5, -1.0, fixed(2), 10, 1), InputError);
  EXPECT_THROW(simulate_iid(0.5, 0.0, fixed(0), 10, 1), InputError);
  EXPECT_THROW(simulate_iid(0.5, 0.0, fixed(2), 0, 1), InputError);
  EXPECT_THROW(simulate_iid(1.0, 0.0, PolicySpec{PolicyKind::kOracle, 0}, 10, 1), InputError);
  EXPECT_THROW(markov_validate(MarkovAcceptance{0.9, 0.3, 0.0, 0.0}), InputError);
  EXPECT_THROW(markov_validate(MarkovAcceptance{1.1, 0.3, 0.1, 0.1}), InputError);
  EXPECT_THROW(policy_kind_parse("greedy"), InputError);
  std::vector<RoundTrace> all_accepted{RoundTrace{3, 3, {}}};
  EXPECT_THROW(trace_replay(all_accepted, 0.0, PolicySpec{PolicyKind::kOracle, 0}, 1), InputError);
}

}  // namespace
}  // namespace speclab
