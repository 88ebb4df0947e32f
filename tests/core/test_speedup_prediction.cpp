// The out-of-sample predictor (core/speedup_prediction.h) against the closed forms of
// Leviathan et al. 2023: Eq. (1) and Theorem 3.8 when every cost but T(1) and c vanishes and
// acceptance is i.i.d.; the oracle bound; and exact small cases worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/speedup_prediction.h"
#include "core/speedup_theory.h"

namespace speclab {
namespace {

// T(k) = T(1) = 1 s, draft step c s per token, no host, catch-up or prefill cost.
CostProfile paper_cost(double c, int g_max) {
  CostProfile p;
  p.source = "test";
  p.target_s.assign(static_cast<size_t>(g_max + 1), 1.0);
  p.host_round_s.assign(static_cast<size_t>(g_max + 1), 0.0);
  for (int n = 0; n <= g_max; n++) p.draft_round_s.push_back(n * c);
  p.draft_step_s = c;
  return p;
}

TEST(SpeedupPrediction, Theorem38WhenCostsAreConstantAndAcceptanceIid) {
  for (double alpha : {0.3, 0.6, 0.8, 0.95}) {
    for (double c : {0.0, 0.05, 0.3}) {
      for (int gamma : {1, 2, 4, 8}) {
        // A long text, so the end of the request (where rounds shrink) weighs nothing.
        const int64_t n = 200000;
        const AcceptanceProfile acc = acceptance_profile_configured({alpha}, 8, 1, n);
        ChainSetting s;
        s.gamma = gamma;
        s.max_new_tokens = n;
        const Prediction p = predict_chain(paper_cost(c, 8), acc, s);
        EXPECT_NEAR(p.speedup, theory_walltime_speedup(alpha, c, gamma), 2e-4)
            << alpha << " " << c << " " << gamma;
        EXPECT_NEAR(p.tokens_per_round, theory_expected_tokens(alpha, gamma), 2e-4);
        EXPECT_NEAR(p.mean_drafted_per_round, gamma, 1e-3);
      }
    }
  }
}

TEST(SpeedupPrediction, NeverAboveTheOracleBound) {
  // The oracle drafts exactly the tokens that will be accepted (section 3.5).
  for (double alpha : {0.5, 0.8, 0.9}) {
    for (int gamma = 1; gamma <= 8; gamma++) {
      const AcceptanceProfile acc = acceptance_profile_configured({alpha}, 8, 1, 50000);
      ChainSetting s;
      s.gamma = gamma;
      s.max_new_tokens = 50000;
      EXPECT_LE(predict_chain(paper_cost(0.1, 8), acc, s).speedup,
                theory_oracle_speedup(alpha, 0.1) + 1e-9);
    }
  }
}

// T(1) = 1, T(2) = 1.5, draft 0.25/token, host 0.1 per round, catch-up 0.2, prefill 0.3.
CostProfile short_text_profile() {
  CostProfile c;
  c.target_s = {1.0, 1.5};
  c.host_round_s = {0.1, 0.1};
  c.draft_round_s = {0.0, 0.25};
  c.draft_step_s = 0.25;
  c.draft_catchup_s = 0.2;
  c.draft_prefill_s = 0.3;
  return c;
}

TEST(SpeedupPrediction, ShortTextByHand) {
  // Two tokens to generate, gamma 1, acceptance 0.5, T(1) = 1, T(2) = 1.5, draft 0.25/token,
  // host 0.1 per round, catch-up 0.2, prefill 0.3.
  //   t = 1: budget 0 -> g = 0: a plain round of 1 + 0.1 = 1.1 s.
  //   t = 0: g = 1: round 0.25 + 1.5 + 0.1 = 1.85; accepted (0.5): both tokens, + catch-up 0.2;
  //          rejected (0.5): one token, then the t = 1 round.
  //   V(0) = 1.85 + 0.5 * 0.2 + 0.5 * 1.1 = 2.5; rounds 1.5; request 2.5 + 0.3 = 2.8 s.
  CostProfile c = short_text_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.5}, 1, 1, 2);
  ChainSetting s;
  s.gamma = 1;
  s.max_new_tokens = 2;
  const Prediction p = predict_chain(c, acc, s);
  EXPECT_NEAR(p.base_s_per_token, 1.1, 1e-12);
  EXPECT_NEAR(p.spec_s_per_token, 2.8 / 2, 1e-12);
  EXPECT_NEAR(p.speedup, 1.1 / 1.4, 1e-12);
  EXPECT_NEAR(p.tokens_per_round, 2 / 1.5, 1e-12);
}

TEST(SpeedupPrediction, ThePlainStepPricesTheBaseline) {
  // The profile of ShortTextByHand with the plain loop's step timed apart (0.8 s after another
  // step, where a verify's T(1) after a proposal is 1 s): the baseline is 0.8 + 0.1 per token,
  // the speculative loop unchanged (its k = 1 round still follows a proposal's place).
  CostProfile c = short_text_profile();
  c.baseline_step_s = 0.8;
  const AcceptanceProfile acc = acceptance_profile_configured({0.5}, 1, 1, 2);
  ChainSetting s;
  s.gamma = 1;
  s.max_new_tokens = 2;
  const Prediction p = predict_chain(c, acc, s);
  EXPECT_NEAR(p.base_s_per_token, 0.9, 1e-12);
  EXPECT_NEAR(p.spec_s_per_token, 2.8 / 2, 1e-12);
  EXPECT_NEAR(p.speedup, 0.9 / 1.4, 1e-12);
  c.baseline_step_s = -1;
  EXPECT_THROW(predict_chain(c, acc, s), InputError);
  // T(k) between profiled k (the profile_stale flag's verify at a round's mean k), clamped.
  EXPECT_NEAR(c.target_at(1.5), 1.25, 1e-12);
  EXPECT_EQ(c.target_at(0.5), 1.0);
  EXPECT_EQ(c.target_at(7.0), 1.5);
}

TEST(SpeedupPrediction, ARoundVerifiedOnTheDeviceIsPricedByTheDevicesRound) {
  // The profile of ShortTextByHand from a target that verifies on its device, whose whole
  // round of k tokens (forward, standardize, verify) was timed at 0.7 s (k = 1) and 0.9 s
  // (k = 2), where its host path costs T(k) + host(k) = 1.1 and 1.6 s:
  //   t = 1: g = 0: a device round of 0.7 s.
  //   t = 0: g = 1: round 0.25 + 0.9 = 1.15; accepted (0.5): both, + catch-up 0.2; rejected
  //          (0.5): one token, then the t = 1 round.
  //   V(0) = 1.15 + 0.5 * 0.2 + 0.5 * 0.7 = 1.6; request 1.6 + 0.3 = 1.9 s for 2 tokens.
  // The baseline (the plain loop: a forward, then the host's standardize + draw) keeps
  // T(1) + host(1) = 1.1 s a token.
  CostProfile c = short_text_profile();
  c.verify_device_s = {0.7, 0.9};
  const AcceptanceProfile acc = acceptance_profile_configured({0.5}, 1, 1, 2);
  ChainSetting s;
  s.gamma = 1;
  s.max_new_tokens = 2;
  s.verify_on_device = true;
  const Prediction p = predict_chain(c, acc, s);
  EXPECT_NEAR(p.base_s_per_token, 1.1, 1e-12);
  EXPECT_NEAR(p.spec_s_per_token, 1.9 / 2, 1e-12);
  EXPECT_NEAR(p.speedup, 1.1 / 0.95, 1e-12);
  EXPECT_NEAR(p.tokens_per_round, 2 / 1.5, 1e-12);
  // A cell whose rounds the host verifies (synthetic acceptance, greedy lenience) keeps the
  // host's price with the same profile; a profile without the device's round too.
  s.verify_on_device = false;
  EXPECT_NEAR(predict_chain(c, acc, s).spec_s_per_token, 2.8 / 2, 1e-12);
  s.verify_on_device = true;
  CostProfile host_only = short_text_profile();
  EXPECT_NEAR(predict_chain(host_only, acc, s).spec_s_per_token, 2.8 / 2, 1e-12);
  // Read between whole k as T(k) is.
  EXPECT_NEAR(c.round_target_side_at(1.5, true), 0.8, 1e-12);
  EXPECT_NEAR(c.round_target_side_at(1.5, false), 1.25 + 0.1, 1e-12);
  // One figure per T(k), finite and >= 0, or none.
  c.verify_device_s = {0.7};
  EXPECT_THROW(predict_chain(c, acc, s), InputError);
  c.verify_device_s = {0.7, -0.1};
  EXPECT_THROW(predict_chain(c, acc, s), InputError);
  c.verify_device_s = {0.7, std::nan("")};
  EXPECT_THROW(predict_chain(c, acc, s), InputError);
}

// T(k) = k s, host(k) = 0.1 k s, no drafting cost; the tree shape "3:sample" drafts nothing
// that costs.
CostProfile linear_tree_cost() {
  CostProfile c;
  c.target_s = {1.0, 2.0, 3.0, 4.0};
  c.host_round_s = {0.1, 0.2, 0.3, 0.4};
  c.draft_round_s = {0.0, 0.0};
  c.draft_tree_s["3:sample"] = {0.0, 0.0};
  return c;
}

// Rounds of a depth-1 sampled tree of 2.5 expected nodes, no round near the budget.
ChainSetting depth_one_tree() {
  ChainSetting s;
  s.gamma = 1;
  s.max_new_tokens = 1000000;
  s.tree_shape = "3:sample";
  s.tree_nodes_at_depth = {0.0, 2.5};
  return s;
}

// A sampled tree's levels have an expected, not whole, node count (repeated draws get no
// node): a round of depth g verifies tree_nodes_at_depth[g] + 1 tokens at T(k) and host(k)
// read between the profiled whole k. T(k) = k s, host(k) = 0.1 k s, no drafting cost, nothing
// accepted (1e-12): every round drafts the depth-1 tree (2.5 nodes) and emits one token.
TEST(SpeedupPrediction, TreeRoundsArePricedAtTheirExpectedNodeCount) {
  const CostProfile c = linear_tree_cost();
  const AcceptanceProfile acc = acceptance_profile_configured({1e-12}, 1, 1, 1000);
  ChainSetting s = depth_one_tree();
  const Prediction p = predict_chain(c, acc, s);
  EXPECT_NEAR(p.spec_s_per_token, 3.5 + 0.35, 1e-9);
  EXPECT_NEAR(p.speedup, 1.1 / 3.85, 1e-9);
  EXPECT_NEAR(p.mean_tree_nodes_per_round, 2.5, 1e-9);
  EXPECT_NEAR(p.mean_drafted_per_round, 1.0, 1e-9);  // depth, as for chains
  // Priced at full width (3 nodes: T(4)) the same round costs more.
  s.tree_nodes_at_depth = {0.0, 3.0};
  EXPECT_NEAR(predict_chain(c, acc, s).spec_s_per_token, 4.4, 1e-9);
  // A chain has no tree nodes to report.
  s.tree_nodes_at_depth.clear();
  EXPECT_EQ(predict_chain(c, acc, s).mean_tree_nodes_per_round, 0.0);
}

// A tree round forgets its tree, so the next proposal reads the i accepted tokens and the
// correction: i + 1 behind, priced draft_behind_s[i + 1] - draft_behind_s[1]; a chain's is
// one behind, two after a fully accepted round (draft_catchup_s). Every draft accepted here:
// rounds of depth 1 emit 2 tokens and leave the drafter 2 behind.
TEST(SpeedupPrediction, ATreeRoundLeavesTheDrafterTheAcceptedTokensBehind) {
  CostProfile c = linear_tree_cost();
  c.draft_catchup_s = 0.2;
  const AcceptanceProfile acc = acceptance_profile_configured({1.0}, 1, 1, 1000);
  ChainSetting s = depth_one_tree();
  // Without a profiled proposal n behind: the chain's catch-up after a fully accepted round.
  EXPECT_NEAR(predict_chain(c, acc, s).spec_s_per_token, (3.85 + 0.2) / 2, 1e-9);
  c.draft_behind_s = {0.0, 0.5, 0.9};
  EXPECT_NEAR(predict_chain(c, acc, s).spec_s_per_token, (3.85 + 0.4) / 2, 1e-9);
  // The same with nothing accepted: one behind, as the steady state the round was timed in.
  const AcceptanceProfile none = acceptance_profile_configured({1e-12}, 1, 1, 1000);
  EXPECT_NEAR(predict_chain(c, none, s).spec_s_per_token, 3.85, 1e-9);
  // A chain keeps its accepted drafts: draft_behind_s does not apply to it.
  s.tree_nodes_at_depth.clear();
  EXPECT_NEAR(predict_chain(c, acc, s).spec_s_per_token, (2.2 + 0.2) / 2, 1e-9);
  c.draft_behind_s = {0.0, 0.5, -1.0};
  EXPECT_THROW(predict_chain(c, acc, s), InputError);
}

TEST(SpeedupPrediction, PerPositionAcceptanceGivesTheRefinedTokensPerRound) {
  // Eq. (1) generalized: E[tokens] = 1 + sum_i prod_{j<=i} a_j.
  const std::vector<double> a = {0.9, 0.7, 0.5, 0.3};
  const AcceptanceProfile acc = acceptance_profile_configured(a, 4, 1, 100000);
  ChainSetting s;
  s.gamma = 4;
  s.max_new_tokens = 100000;
  const Prediction p = predict_chain(paper_cost(0.0, 4), acc, s);
  EXPECT_NEAR(p.tokens_per_round, theory_refined_expected_tokens(a, 4), 1e-3);
  const AcceptanceSummary sum = acceptance_summarize(acc);
  for (size_t i = 0; i < a.size(); i++) EXPECT_NEAR(sum.conditional[i], a[i], 1e-6);
  EXPECT_NEAR(sum.alpha_beta, a[0], 1e-6);
}

TEST(SpeedupPrediction, PminCutsRolloutsAndFixedPolicyWalksAgreeWithTheExpectation) {
  AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 500);
  // Every third position: the third draft token is unsure (top probability 0.2).
  for (auto& p : acc.prompts)
    for (size_t t = 0; t < p.positions.size(); t += 3) p.positions[t].top_prob[2] = 0.2f;
  ChainSetting s;
  s.gamma = 4;
  s.max_new_tokens = 500;
  s.p_min = 0.5;
  const CostProfile c = paper_cost(0.1, 4);
  const Prediction exact = predict_chain(c, acc, s);
  EXPECT_LT(exact.mean_drafted_per_round, 4.0);
  EXPECT_GT(exact.mean_drafted_per_round, 2.0);  // rounds at cut positions draft 2
  // The Monte Carlo walker (used for adaptive policies) held to the exact recursion.
  ChainSetting w = s;
  w.force_walks = true;
  w.monte_carlo_walks = 400;
  const Prediction walked = predict_chain(c, acc, w);
  EXPECT_NEAR(walked.tokens_per_round, exact.tokens_per_round, 0.02 * exact.tokens_per_round);
  EXPECT_NEAR(walked.speedup, exact.speedup, 0.02 * exact.speedup);
}

TEST(SpeedupPrediction, HeuristicPolicyGrowsGammaWhenEverythingIsAccepted) {
  // Acceptance 1: HF's schedule adds 2 per round up to the profile's depth; the walk must
  // draft more per round than a fixed gamma of 1 would, and tokens per round = drafted + 1.
  const AcceptanceProfile acc = acceptance_profile_configured({1.0}, 8, 2, 400);
  ChainSetting s;
  s.gamma = 1;
  s.policy = "heuristic";
  s.max_new_tokens = 400;
  s.monte_carlo_walks = 20;
  const Prediction p = predict_chain(paper_cost(0.1, 8), acc, s);
  EXPECT_GT(p.mean_drafted_per_round, 6.0);
  EXPECT_NEAR(p.tokens_per_round, p.mean_drafted_per_round + 1, 1e-9);
}

TEST(SpeedupPrediction, RefusesACostProfileThatDoesNotCoverTheRound) {
  const AcceptanceProfile acc = acceptance_profile_configured({0.5}, 8, 1, 10);
  ChainSetting s;
  s.gamma = 8;
  EXPECT_THROW(predict_chain(paper_cost(0.1, 4), acc, s), InputError);
  CostProfile bad = paper_cost(0.1, 8);
  bad.target_s[3] = std::nan("");
  s.gamma = 2;
  EXPECT_THROW(predict_chain(bad, acc, s), InputError);
  bad = paper_cost(0.1, 8);
  bad.target_s[0] = 0;
  EXPECT_THROW(predict_chain(bad, acc, s), InputError);
}

TEST(SpeedupPrediction, AlphaIntervalCoversThePooledMeanAndShrinksWithPrompts) {
  AcceptanceProfile acc;
  acc.max_depth = 1;
  for (int i = 0; i < 20; i++) {
    AcceptancePrompt p;
    p.prompt_id = std::to_string(i);
    for (int t = 0; t < 30; t++) {
      AcceptanceRollout r;
      r.accept = {i % 2 ? 0.9f : 0.5f};
      r.top_prob = {1};
      r.entropy = {0};
      r.beta = r.accept[0];
      p.positions.push_back(r);
    }
    acc.prompts.push_back(p);
  }
  const AcceptanceSummary s = acceptance_summarize(acc);
  EXPECT_NEAR(s.alpha_beta, 0.7, 1e-6);
  const AlphaInterval ci = acceptance_alpha_interval(acc, 500, 0.95, 1);
  EXPECT_LT(ci.lo, 0.7);
  EXPECT_GT(ci.hi, 0.7);
  EXPECT_GT(ci.lo, 0.55);  // clusters differ, so the interval is wide but not absurd
  EXPECT_LT(ci.hi, 0.85);
}

}  // namespace
}  // namespace speclab
