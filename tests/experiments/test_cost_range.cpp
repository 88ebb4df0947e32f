// predict_cost_range: the speedup at the ends of a cost profile's own timing spread. Checked
// against figures worked by hand: scaling every timed figure scales both loops, so a spread of
// 0.5x .. 2x around every median gives exactly speedup / 4 .. speedup x 4; a spread on the plain
// step alone moves only the plain side (a range with its ends swapped, the speculative side's
// fastest end over the plain side's slowest, fails both).
#include <gtest/gtest.h>

#include <cmath>

#include "core/speedup_prediction.h"
#include "experiments/predict/cost_range.h"

namespace speclab {
namespace {

// T(k) for k = 1..5, host(k), draft rounds of 0..4 tokens; no catch-up or prefill (they stay
// at their medians at both ends, so leaving them out makes the scaling exact).
CostProfile chain_profile() {
  CostProfile c;
  c.target_s = {0.10, 0.11, 0.12, 0.13, 0.14};
  c.host_round_s = {0.001, 0.001, 0.002, 0.002, 0.003};
  c.draft_round_s = {0.0, 0.03, 0.06, 0.09, 0.12};
  c.draft_step_s = 0.03;
  c.baseline_step_s = 0.105;
  return c;
}

TimingSpread scaled(const std::vector<double>& median, double lo, double hi) {
  TimingSpread s;
  for (double m : median) {
    s.min.push_back(m * lo);
    s.median.push_back(m);
    s.max.push_back(m * hi);
  }
  return s;
}

CostProfileSpread spread_of(const CostProfile& c, double lo, double hi, double plain_lo,
                            double plain_hi) {
  CostProfileSpread s;
  s.reps = 5;
  s.target_s = scaled(c.target_s, lo, hi);
  s.host_round_s = scaled(c.host_round_s, lo, hi);
  s.draft_round_s = scaled(c.draft_round_s, lo, hi);
  s.baseline_step_s = scaled({c.baseline_step_s}, plain_lo, plain_hi);
  return s;
}

ChainSetting gamma4() {
  ChainSetting s;
  s.gamma = 4;
  s.max_new_tokens = 48;
  return s;
}

TEST(CostRange, EveryFigureAtHalfAndTwiceItsMedianGivesAQuarterToFourTimesTheSpeedup) {
  const CostProfile c = chain_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 48);
  const double speedup = predict_chain(c, acc, gamma4()).speedup;
  const SpeedupRange r = predict_cost_range(c, spread_of(c, 0.5, 2.0, 0.5, 2.0), acc, gamma4());
  EXPECT_NEAR(r.lo, speedup / 4, 1e-12 * speedup);
  EXPECT_NEAR(r.hi, speedup * 4, 1e-12 * speedup);
}

TEST(CostRange, APlainStepSpreadMovesOnlyThePlainSide) {
  const CostProfile c = chain_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 48);
  const Prediction p = predict_chain(c, acc, gamma4());
  // The speculative loop's figures without spread; the plain step 0.9x .. 1.2x.
  const SpeedupRange r = predict_cost_range(c, spread_of(c, 1.0, 1.0, 0.9, 1.2), acc, gamma4());
  const double host1 = c.host_round_s[0];
  EXPECT_NEAR(r.lo, (0.9 * c.baseline_step_s + host1) / p.spec_s_per_token, 1e-12);
  EXPECT_NEAR(r.hi, (1.2 * c.baseline_step_s + host1) / p.spec_s_per_token, 1e-12);
  EXPECT_LT(r.lo, p.speedup);
  EXPECT_GT(r.hi, p.speedup);
}

TEST(CostRange, NoRangeWithoutASpreadThatCoversTheProfile) {
  const CostProfile c = chain_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 48);
  EXPECT_TRUE(std::isnan(predict_cost_range(c, CostProfileSpread{}, acc, gamma4()).lo));
  CostProfileSpread shorter = spread_of(c, 0.9, 1.1, 0.9, 1.1);
  shorter.target_s.min.pop_back();  // an older file's lists of other lengths
  shorter.target_s.max.pop_back();
  EXPECT_TRUE(std::isnan(predict_cost_range(c, shorter, acc, gamma4()).hi));
  CostProfile with_tree = c;
  with_tree.draft_tree_s["2x2"] = {0.0, 0.03, 0.09};  // timed, but not in the spread
  EXPECT_TRUE(std::isnan(
      predict_cost_range(with_tree, spread_of(c, 0.9, 1.1, 0.9, 1.1), acc, gamma4()).lo));
}

TEST(CostRange, ASpreadKeepsTheMeanOfItsRepetitions) {
  TimingSpread s;
  timing_spread_add(&s, {0.006, 0.001, 0.002});
  timing_spread_add(&s, {0.004});
  EXPECT_EQ(s.min, (std::vector<double>{0.001, 0.004}));
  EXPECT_EQ(s.median, (std::vector<double>{0.002, 0.004}));
  EXPECT_EQ(s.max, (std::vector<double>{0.006, 0.004}));
  ASSERT_EQ(s.mean.size(), 2u);
  EXPECT_NEAR(s.mean[0], 0.003, 1e-15);
  EXPECT_EQ(s.mean[1], 0.004);
}

// A machine whose speed flips between repetitions: the plain step met the fast state in 3 of
// its 5 repetitions, every other figure in 2 of 5 (slow = 1.5x). The medians take the plain
// step fast and the speculative side slow; the means weigh both by their own mixture (1.2x and
// 1.3x), and the mean-cost prediction is predict_chain on exactly those means.
TEST(CostRange, MeanCostsPriceEveryFigureAtTheMeanOfItsRepetitions) {
  const CostProfile c = chain_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 48);
  const std::vector<double> plain_states = {1, 1, 1, 1.5, 1.5},
                            other_states = {1, 1, 1.5, 1.5, 1.5};
  const auto spread_at = [](const std::vector<double>& fast, const std::vector<double>& states) {
    TimingSpread s;
    for (double x : fast) {
      std::vector<double> reps;
      for (double f : states) reps.push_back(x * f);
      timing_spread_add(&s, reps);
    }
    return s;
  };
  CostProfileSpread spread;
  spread.reps = 5;
  spread.target_s = spread_at(c.target_s, other_states);
  spread.host_round_s = spread_at(c.host_round_s, other_states);
  spread.draft_round_s = spread_at(c.draft_round_s, other_states);
  spread.baseline_step_s = spread_at({c.baseline_step_s}, plain_states);
  CostProfile at_means = c;
  at_means.baseline_step_s *= 1.2;
  for (auto* list : {&at_means.target_s, &at_means.host_round_s, &at_means.draft_round_s})
    for (double& x : *list) x *= 1.3;
  at_means.draft_step_s = at_means.draft_round_s[1];
  const double want = predict_chain(at_means, acc, gamma4()).speedup;
  const double got = predict_speedup_at_mean_costs(c, spread, acc, gamma4());
  EXPECT_NEAR(got, want, 1e-12 * want);
  // The medians' prediction (the plain step fast, every other figure slow) is well below it.
  CostProfile at_medians = c;
  for (auto* list : {&at_medians.target_s, &at_medians.host_round_s, &at_medians.draft_round_s})
    for (double& x : *list) x *= 1.5;
  at_medians.draft_step_s = at_medians.draft_round_s[1];
  EXPECT_LT(predict_chain(at_medians, acc, gamma4()).speedup, 0.9 * got);
}

TEST(CostRange, NoMeanCostPredictionWithoutMeans) {
  const CostProfile c = chain_profile();
  const AcceptanceProfile acc = acceptance_profile_configured({0.8}, 4, 3, 48);
  // An older file's spread: min, median and max, no means.
  EXPECT_TRUE(std::isnan(
      predict_speedup_at_mean_costs(c, spread_of(c, 0.9, 1.1, 0.9, 1.1), acc, gamma4())));
  EXPECT_TRUE(std::isnan(predict_speedup_at_mean_costs(c, CostProfileSpread{}, acc, gamma4())));
}

}  // namespace
}  // namespace speclab
