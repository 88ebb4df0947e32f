// Gamma policies: exact sequences of next_gamma() for scripted round outcomes.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/gamma_policy.h"

namespace speclab {
namespace {

struct Step {
  int n_draft, n_accepted;
  std::vector<float> entropies;
};

// Runs the script: next_gamma() before each step, observe() after; returns the gammas
// (one more than steps: the last is after the final observation).
std::vector<int> run(GammaPolicy& policy, const std::vector<Step>& steps) {
  std::vector<int> gammas;
  for (const Step& s : steps) {
    gammas.push_back(policy.next_gamma());
    policy.observe(s.n_draft, s.n_accepted, s.entropies);
  }
  gammas.push_back(policy.next_gamma());
  return gammas;
}

TEST(GammaPolicy, FixedNeverMoves) {
  GammaFixed fixed(3);
  EXPECT_EQ(run(fixed, {{3, 3, {}}, {3, 0, {}}, {3, 1, {0.9f}}}), (std::vector<int>{3, 3, 3, 3}));
}

TEST(GammaPolicy, HfHeuristicPlusTwoMinusOneFloorOne) {
  GammaHfHeuristic h(5);
  // all accepted: +2, +2; partial: -1; none: -1; then rejections down to the floor of 1.
  const std::vector<Step> steps = {{5, 5, {}}, {7, 7, {}}, {9, 2, {}}, {8, 0, {}},
                                   {7, 6, {}}, {6, 0, {}}, {5, 0, {}}, {4, 0, {}},
                                   {3, 0, {}}, {2, 1, {}}, {1, 0, {}}, {1, 1, {}}};
  EXPECT_EQ(run(h, steps), (std::vector<int>{5, 7, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1, 3}));
}

TEST(GammaPolicy, EntropyGuidedNoSmoothing) {
  // gamma = round(8 - 7 h): h = 0 -> 8, 1 -> 1, 0.5 -> 4.5 -> 5 (half away from zero),
  // mean(0.2, 0.4) = 0.3 -> 5.9 -> 6; entropies above 1 are clamped; an empty round
  // leaves the estimate unchanged.
  GammaEntropyGuided e(1, 8, 0.0);
  const std::vector<Step> steps = {{8, 8, {0.0f, 0.0f}}, {8, 1, {1.0f, 1.0f}}, {1, 0, {0.5f}},
                                   {5, 2, {0.2f, 0.4f}}, {6, 6, {}},           {6, 0, {3.0f}}};
  EXPECT_EQ(run(e, steps), (std::vector<int>{8, 8, 1, 5, 6, 6, 1}));
}

TEST(GammaPolicy, EntropyGuidedEma) {
  // beta = 0.5: h = 1 (first observation taken as is), then 0.5, 0.25, 0.125 ->
  // gamma = round(8 - 7h) = 1, 5 (4.5), 6 (6.25), 7 (7.125).
  GammaEntropyGuided e(1, 8, 0.5);
  const std::vector<Step> steps = {{8, 0, {1.0f}}, {1, 1, {0.0f}}, {5, 5, {0.0f}}, {6, 6, {0.0f}}};
  EXPECT_EQ(run(e, steps), (std::vector<int>{8, 1, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(e.smoothed_entropy(), 0.125);
  // gamma_min = gamma_max pins gamma.
  GammaEntropyGuided pinned(4, 4, 0.3);
  EXPECT_EQ(run(pinned, {{4, 0, {1.0f}}, {4, 4, {0.0f}}}), (std::vector<int>{4, 4, 4}));
}

TEST(GammaPolicy, FactoryByName) {
  // One factory for the CLI, the sweeps and the simulator: --gamma / sweep.gamma is gamma_max.
  auto fixed = gamma_policy_create("fixed", 3);
  EXPECT_EQ(run(*fixed, {{3, 0, {}}, {3, 3, {}}}), (std::vector<int>{3, 3, 3}));
  auto heuristic = gamma_policy_create("heuristic", 5);
  EXPECT_EQ(run(*heuristic, {{5, 5, {}}, {7, 2, {}}}), (std::vector<int>{5, 7, 6}));
  auto entropy = gamma_policy_create("entropy", 8);  // gamma_min 1, beta 0.5
  EXPECT_EQ(run(*entropy, {{8, 0, {1.0f}}, {1, 1, {0.0f}}}), (std::vector<int>{8, 1, 5}));
  EXPECT_THROW(gamma_policy_create("wild", 4), InputError);
  EXPECT_THROW(gamma_policy_create("fixed", 0), InputError);
  EXPECT_THROW(gamma_policy_create("entropy", 0), InputError);
}

TEST(GammaPolicy, InvalidParametersThrow) {
  EXPECT_THROW(GammaFixed(0), InputError);
  EXPECT_THROW(GammaHfHeuristic(0), InputError);
  EXPECT_THROW(GammaEntropyGuided(0, 4), InputError);
  EXPECT_THROW(GammaEntropyGuided(5, 4), InputError);
  EXPECT_THROW(GammaEntropyGuided(1, 4, 1.0), InputError);
}

}  // namespace
}  // namespace speclab
