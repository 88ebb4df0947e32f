// The continuous-batching predictor (core/batched_speedup_prediction.h): small loops worked by
// hand (every round's cost, the catch-up after a fully accepted round, admission and the
// drafter's prefill), its agreement with the one-request predictor at concurrency 1, the
// two limits of batching (costs proportional to the rows: no gain from batching at all;
// costs flat in the rows: the plain loop scales by N), interpolation and refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "core/batched_speedup_prediction.h"
#include "core/error.h"
#include "core/speedup_prediction.h"

namespace speclab {
namespace {

// One-request profile: T(k) = 1 + 0.1 (k - 1), draft 0.2 s per token, host 0.01 k.
CostProfile one_profile(int g_max) {
  CostProfile p;
  p.source = "test";
  for (int k = 1; k <= g_max + 1; k++) {
    p.target_s.push_back(1.0 + 0.1 * (k - 1));
    p.host_round_s.push_back(0.01 * k);
  }
  for (int n = 0; n <= g_max; n++) p.draft_round_s.push_back(0.2 * n);
  p.draft_step_s = 0.2;
  p.draft_catchup_s = 0.05;
  return p;
}

// The batched profile at slots {1, 2, 4, 8} whose figures are the one-request ones scaled by
// scale(b) (b for costs proportional to the rows, 1 for costs flat in them).
BatchedCostProfile many_profile(const CostProfile& one, double (*scale)(int)) {
  BatchedCostProfile m;
  m.source = "test";
  for (int b : {1, 2, 4, 8}) {
    m.slots.push_back(b);
    std::vector<double> t, d;
    for (double x : one.target_s) t.push_back(x * scale(b));
    for (double x : one.draft_round_s) d.push_back(x * scale(b));
    m.target_s.push_back(t);
    m.draft_round_s.push_back(d);
    m.draft_catchup_s.push_back(one.draft_catchup_s * scale(b));
  }
  return m;
}
double proportional(int b) { return b; }
double flat(int) { return 1.0; }

// Slots 1 and 2, T(b, k) for k = 1..3, draft(b, n) for n = 0..2: the hand-worked loops.
BatchedCostProfile two_slot_profile() {
  BatchedCostProfile many;
  many.slots = {1, 2};
  many.target_s = {{1.0, 1.1, 1.2}, {1.5, 1.8, 2.0}};
  many.draft_round_s = {{0, 0.2, 0.4}, {0, 0.3, 0.5}};
  many.draft_catchup_s = {0.05, 0.07};
  return many;
}

BatchedSetting setting(int gamma, int concurrency, int64_t max_new_tokens) {
  BatchedSetting s;
  s.chain.gamma = gamma;
  s.chain.max_new_tokens = max_new_tokens;
  s.chain.monte_carlo_walks = 400;
  s.concurrency = concurrency;
  return s;
}

TEST(BatchedSpeedupPrediction, EveryDraftAcceptedByHand) {
  // Two requests of 6 tokens, both drafts always accepted, gamma 2, N = 2: two rounds of 3
  // tokens each; the second round catches both slots up by two tokens.
  const CostProfile one = one_profile(4);
  BatchedCostProfile many = two_slot_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({1.0}, 2, 2, 6);
  BatchedSetting s = setting(2, 2, 6);
  const BatchedPrediction p = predict_batched(one, many, acc, s);
  const double round = 0.5 + 2.0 + 2 * one.host_round_s[2];  // draft(2,2) + T(2,3) + host
  const double spec = 2 * round + 0.07;                      // + catchup(2) x 2/2
  const double base = 6 * (1.5 + 2 * one.host_round_s[0]);   // T(2,1) + 2 host(1) per step
  EXPECT_NEAR(p.throughput_speedup, base / spec, 1e-12);
  EXPECT_NEAR(p.speedup, base / spec, 1e-12);  // both finish together
  EXPECT_NEAR(p.tokens_per_round, 3.0, 1e-12);
  EXPECT_NEAR(p.mean_drafted_per_round, 2.0, 1e-12);
  EXPECT_NEAR(p.mean_active, 2.0, 1e-12);
  EXPECT_NEAR(p.base_tokens_per_s, 12 / base, 1e-12);
  EXPECT_NEAR(p.spec_tokens_per_s, 12 / spec, 1e-12);
  EXPECT_NEAR(p.prefill_share_spec, 0.0, 1e-12);
}

TEST(BatchedSpeedupPrediction, ThePlainStepPricesThePlainLoopAndRoundsWithoutDrafts) {
  // EveryDraftAcceptedByHand with the plain step timed apart: plain(1) = 0.9, plain(2) = 1.2
  // (a step after a step), where T(b, 1) after a proposal is 1.0 and 1.5. The plain loop
  // pays plain(2); the speculative rounds still pay T(2, 3).
  const CostProfile one = one_profile(4);
  BatchedCostProfile many = two_slot_profile();
  many.baseline_step_s = {0.9, 1.2};
  const AcceptanceProfile acc = acceptance_profile_configured({1.0}, 2, 2, 6);
  BatchedSetting s = setting(2, 2, 6);
  const double round = 0.5 + 2.0 + 2 * one.host_round_s[2];
  const double spec = 2 * round + 0.07;
  const double base = 6 * (1.2 + 2 * one.host_round_s[0]);
  EXPECT_NEAR(predict_batched(one, many, acc, s).throughput_speedup, base / spec, 1e-12);
  EXPECT_NEAR(many.plain_step_at(1.5), 1.05, 1e-12);  // interpolated between slots
  // A load-following table that never drafts runs the plain loop's steps: exactly 1x, the
  // drafter's prefill never paid (it never reads the prompts).
  s.gamma_by_load = {0, 0, 0};
  many.draft_prefill_s_per_token = 0.05;
  s.prompt_lens = {5, 3};
  const BatchedPrediction none = predict_batched(one, many, acc, s);
  EXPECT_NEAR(none.throughput_speedup, 1.0, 1e-12);
  EXPECT_NEAR(none.mean_drafted_per_round, 0.0, 1e-12);
  // Without the figure (a file from before it was timed apart) T(b, 1) stands in.
  many.baseline_step_s.clear();
  EXPECT_EQ(many.plain_step_at(2), 1.5);
  many.baseline_step_s = {0.9};
  EXPECT_THROW(predict_batched(one, many, acc, s), InputError);
}

TEST(BatchedSpeedupPrediction, AdmissionAndDraftPrefillByHand) {
  // As above, with prompts of 5 and 3 tokens: admission prefills 4 + 2 tokens in both loops
  // (0.1 s each); the drafter reads them in the first round (0.05 s each).
  const CostProfile one = one_profile(4);
  BatchedCostProfile many = two_slot_profile();
  many.target_prefill_s_per_token = 0.1;
  many.draft_prefill_s_per_token = 0.05;
  const AcceptanceProfile acc = acceptance_profile_configured({1.0}, 2, 2, 6);
  BatchedSetting s = setting(2, 2, 6);
  s.prompt_lens = {5, 3};
  const BatchedPrediction p = predict_batched(one, many, acc, s);
  const double round = 0.5 + 2.0 + 2 * one.host_round_s[2];
  const double spec_decode = 2 * round + 0.07 + 0.3;
  const double base_decode = 6 * (1.5 + 2 * one.host_round_s[0]);
  EXPECT_NEAR(p.throughput_speedup, (0.6 + base_decode) / (0.6 + spec_decode), 1e-12);
  EXPECT_NEAR(p.speedup, base_decode / spec_decode, 1e-12);  // decode: after admission
  EXPECT_NEAR(p.prefill_share_spec, 0.6 / (0.6 + spec_decode), 1e-12);
  // Without the drafter's prefill (model-free drafters).
  s.draft_prefill = false;
  EXPECT_NEAR(predict_batched(one, many, acc, s).speedup, base_decode / (spec_decode - 0.3), 1e-12);
}

TEST(BatchedSpeedupPrediction, ConcurrencyOneIsTheOneRequestPrediction) {
  // With the batched profile at b = 1 equal to the one-request profile, the replayed loop at
  // N = 1 is the one-request prediction (up to its Monte Carlo error).
  const CostProfile one = one_profile(8);
  const BatchedCostProfile many = many_profile(one, proportional);
  for (double alpha : {0.5, 0.8}) {
    for (int gamma : {1, 3, 6}) {
      const AcceptanceProfile acc = acceptance_profile_configured({alpha}, 8, 4, 64);
      BatchedSetting s = setting(gamma, 1, 64);
      const BatchedPrediction p = predict_batched(one, many, acc, s);
      const Prediction q = predict_chain(one, acc, s.chain);
      EXPECT_NEAR(p.speedup / q.speedup, 1.0, 0.01) << alpha << " " << gamma;
      EXPECT_NEAR(p.throughput_speedup / q.speedup, 1.0, 0.01) << alpha << " " << gamma;
      EXPECT_NEAR(p.tokens_per_round / q.tokens_per_round, 1.0, 0.01);
    }
  }
}

TEST(BatchedSpeedupPrediction, CostsProportionalToRowsGainNothingFromBatching) {
  // T(b, k) = b T(1, k): N requests at once cost N requests one after another, so the
  // throughput speedup is the one-request speedup at every N.
  const CostProfile one = one_profile(8);
  const BatchedCostProfile many = many_profile(one, proportional);
  const AcceptanceProfile acc = acceptance_profile_configured({0.7}, 8, 8, 48);
  const double at1 = predict_batched(one, many, acc, setting(4, 1, 48)).throughput_speedup;
  for (int n : {2, 3, 4, 8}) {
    const double at_n = predict_batched(one, many, acc, setting(4, n, 48)).throughput_speedup;
    EXPECT_NEAR(at_n / at1, 1.0, 0.01) << n;
  }
}

TEST(BatchedSpeedupPrediction, CostsFlatInRowsScaleThePlainLoop) {
  // T(b, k) = T(1, k): a step of N rows costs one row's time, so the plain loop's throughput
  // grows with N (host costs aside), and speculation's gain shrinks as host(k) per request
  // grows with N.
  const CostProfile one = one_profile(8);
  const BatchedCostProfile many = many_profile(one, flat);
  const AcceptanceProfile acc = acceptance_profile_configured({0.7}, 8, 8, 48);
  const BatchedPrediction p1 = predict_batched(one, many, acc, setting(4, 1, 48));
  const BatchedPrediction p8 = predict_batched(one, many, acc, setting(4, 8, 48));
  const double step1 = 1.0 + one.host_round_s[0], step8 = 1.0 + 8 * one.host_round_s[0];
  EXPECT_NEAR(p8.base_tokens_per_s / p1.base_tokens_per_s, 8 * step1 / step8, 1e-9);
  EXPECT_LT(p8.throughput_speedup, p1.throughput_speedup);
  EXPECT_GT(p8.throughput_speedup, 1.0);
}

TEST(BatchedSpeedupPrediction, InterpolatesBetweenProfiledPoints) {
  const CostProfile one = one_profile(4);
  BatchedCostProfile m = many_profile(one, proportional);
  // b = 3 between 2 and 4; k = 2.5 between 2 and 3.
  EXPECT_NEAR(m.target_at(3, 1), 3 * one.target_s[0], 1e-12);
  EXPECT_NEAR(m.target_at(3, 2.5), 3 * (one.target_s[1] + one.target_s[2]) / 2, 1e-12);
  EXPECT_NEAR(m.draft_at(6, 1.5), 6 * 0.3, 1e-12);
  EXPECT_NEAR(m.catchup_at(5), 5 * one.draft_catchup_s, 1e-12);
  EXPECT_NEAR(m.target_at(8, 5), 8 * one.target_s[4], 1e-12);
}

TEST(BatchedSpeedupPrediction, RefusesWhatTheProfileDoesNotCover) {
  const CostProfile one = one_profile(4);
  const BatchedCostProfile many = many_profile(one, proportional);
  const AcceptanceProfile acc = acceptance_profile_configured({0.7}, 4, 2, 16);
  EXPECT_THROW(predict_batched(one, many, acc, setting(2, 16, 16)), InputError);  // b > 8
  EXPECT_THROW(predict_batched(one, many, acc, setting(6, 2, 16)), InputError);   // k > 5
  BatchedCostProfile bad = many;
  bad.slots = {1, 4, 2, 8};
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  bad = many;
  bad.slots[0] = 2;
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  bad = many;
  bad.target_s[2][1] = -1;
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  bad = many;
  bad.draft_round_s[1].pop_back();
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  bad = many;
  bad.draft_catchup_s[3] = NAN;
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  bad = many;
  bad.target_prefill_s_per_token = INFINITY;
  EXPECT_THROW(batched_cost_profile_validate(bad, "f"), InputError);
  try {
    batched_cost_profile_validate(bad, "profiles/batched-cost-x.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("profiles/batched-cost-x.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("target_prefill_s_per_token"), std::string::npos);
  }
}

TEST(BatchedSpeedupPrediction, PredictedGammaFollowsTheLoad) {
  // One row costs 1 s, each further row of the forward 0.5 s (a machine on which batching
  // pays a little), draft 0.1 s per token and slot (plus 20% per further slot), no host cost,
  // alpha 0.8 i.i.d.: with one request speculation pays; with 8 the verify of 8 x (k + 1)
  // rows costs more than the tokens it buys.
  CostProfile one = one_profile(4);
  for (double& h : one.host_round_s) h = 0;
  BatchedCostProfile m;
  for (int b : {1, 2, 4, 8}) {
    m.slots.push_back(b);
    std::vector<double> t, d;
    for (int k = 1; k <= 5; k++) t.push_back(1.0 + 0.5 * (b * k - 1));
    for (int n = 0; n <= 4; n++) d.push_back(0.1 * n * (1 + 0.2 * (b - 1)));
    m.target_s.push_back(t);
    m.draft_round_s.push_back(d);
    m.draft_catchup_s.push_back(0);
  }
  const std::vector<double> survival = {0.8, 0.64, 0.512, 0.4096};
  const std::vector<int> g = predicted_gamma_by_load(one, m, survival, 4);
  ASSERT_EQ(g.size(), 9u);
  EXPECT_EQ(g[0], 0);
  // By hand, rate(k) = b (1 + sum_{i<=k} S(i)) / (draft(b, k) + T(b, k + 1)); k = 0: b / T(b, 1).
  // b = 1: k = 0: 1; k = 1: 1.8 / 1.6 = 1.125; k = 2: 2.44 / 2.2 = 1.109: k = 1.
  EXPECT_EQ(g[1], 1);
  // b = 2: k = 0: 2 / 1.5 = 1.333; k = 1: 3.6 / (0.12 + 2.5) = 1.374: k = 1.
  EXPECT_EQ(g[2], 1);
  // b = 4: k = 0: 4 / 2.5 = 1.6; k = 1: 7.2 / (0.16 + 4.5) = 1.545: no drafting.
  EXPECT_EQ(g[4], 0);
  // b = 8: k = 0: 8 / 4.5 = 1.778; k = 1: 14.4 / (0.24 + 8.5) = 1.648: no drafting.
  EXPECT_EQ(g[8], 0);
  // b = 3 between the profiled 2 and 4 (interpolated): k = 0: 3 / 2 = 1.5; k = 1:
  // 5.4 / (0.14 + 3.5) = 1.484: no drafting.
  EXPECT_EQ(g[3], 0);
  // The replay with the table drafts nothing at 8 in flight (the tail drafts again), and
  // gains one request at a time.
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 8, 32);
  BatchedSetting s = setting(4, 8, 32);
  s.gamma_by_load = g;
  EXPECT_NEAR(predict_batched(one, m, acc, s).throughput_speedup, 1.0, 0.05);
  BatchedSetting s1 = setting(4, 1, 32);
  s1.gamma_by_load = g;
  EXPECT_GT(predict_batched(one, m, acc, s1).throughput_speedup, 1.05);
}

TEST(BatchedSpeedupPrediction, CrossoverIsTheLargestConcurrencyAboveOne) {
  EXPECT_EQ(crossover_concurrency({1, 2, 4, 8}, {1.5, 1.2, 0.9, 0.7}), 2);
  EXPECT_EQ(crossover_concurrency({1, 2, 4, 8}, {0.9, 0.8, 0.7, 0.6}), 0);
  EXPECT_EQ(crossover_concurrency({1, 2, 4, 8}, {1.5, 1.4, 1.3, 1.2}), 8);
  EXPECT_EQ(crossover_concurrency({1, 2, 4, 8}, {1.5, NAN, 1.1, 0.9}), 4);
  EXPECT_EQ(crossover_concurrency({1, 2}, {1.0, 1.0}), 0);  // break-even does not pay
}

}  // namespace
}  // namespace speclab
