// The in-run law check's statistics (core/law_check.h): the randomized PIT by hand, its
// uniformity under the null, the Bonferroni family and the power figures against hand
// computations at one degree of freedom, where the chi-square is a squared normal.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/law_check.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/stats.h"

namespace speclab {
namespace {

TEST(LawCheck, PitOrdersByProbabilityThenId) {
  // Ranked: id 1 (0.5), id 2 (0.2), id 3 (0.2, after 2 on the tie), id 0 (0.1).
  const std::vector<float> p = {0.1f, 0.5f, 0.2f, 0.2f};
  EXPECT_NEAR(law_pit(p.data(), 4, 1, 0.5), 0.25, 1e-7);
  EXPECT_NEAR(law_pit(p.data(), 4, 2, 0.5), 0.6, 1e-7);
  EXPECT_NEAR(law_pit(p.data(), 4, 3, 0.0), 0.7, 1e-7);
  EXPECT_NEAR(law_pit(p.data(), 4, 0, 0.5), 0.95, 1e-7);
  EXPECT_LT(law_pit(p.data(), 4, 0, 1.0 - 1e-17), 1.0);  // [0, 1) even at the top
  EXPECT_EQ(law_pit_bin(0.0, 10), 0);
  EXPECT_EQ(law_pit_bin(0.95, 10), 9);
  EXPECT_EQ(law_pit_bin(0.25, 2), 0);
}

// Under the null (x ~ p, v apart) u is Uniform(0, 1) whatever p is: many random rows, some
// sharp and some with zeros (top-k), one token each.
TEST(LawCheck, PitIsUniformWhenTokensFollowP) {
  const int64_t vocab = 50;
  LawCheckTally tally;
  std::vector<float> logits(vocab), p(vocab);
  for (uint64_t t = 0; t < 20000; t++) {
    for (int64_t x = 0; x < vocab; x++)
      logits[x] = static_cast<float>(4.0 * rng_uniform({7, t, static_cast<uint64_t>(x), 1, 0}));
    const SamplingParams sp{t % 3 == 0 ? 0.3f : 1.0f, t % 2 ? 10 : 0, 1.0f};
    sampling_standardize(p.data(), logits.data(), vocab, sp);
    const int32_t x = sampling_draw(p.data(), vocab, rng_uniform({7, t, 0, kRngTest, 0}));
    tally.add_emitted(static_cast<int>(t % 3),
                      law_pit(p.data(), vocab, x, rng_uniform({7, t, 0, kRngLawCheck, 0})));
  }
  const LawCheckResult r = law_check_evaluate(tally);
  EXPECT_EQ(r.n_tokens, 20000);
  EXPECT_EQ(r.n_tests, 4);  // overall and 3 positions
  EXPECT_GT(r.p_value, 1e-3);
  EXPECT_FALSE(r.failed());
}

// The same rows with tokens drawn at another temperature than p's: rejected.
TEST(LawCheck, PitRejectsTokensFromASharperLaw) {
  const int64_t vocab = 50;
  LawCheckTally tally;
  std::vector<float> logits(vocab), p(vocab), sharp(vocab);
  for (uint64_t t = 0; t < 2000; t++) {
    for (int64_t x = 0; x < vocab; x++)
      logits[x] = static_cast<float>(4.0 * rng_uniform({7, t, static_cast<uint64_t>(x), 1, 0}));
    sampling_standardize(p.data(), logits.data(), vocab, SamplingParams{1.0f, 0, 1.0f});
    sampling_standardize(sharp.data(), logits.data(), vocab, SamplingParams{0.7f, 0, 1.0f});
    const int32_t x = sampling_draw(sharp.data(), vocab, rng_uniform({7, t, 0, kRngTest, 0}));
    tally.add_emitted(0, law_pit(p.data(), vocab, x, rng_uniform({7, t, 0, kRngLawCheck, 0})));
  }
  EXPECT_TRUE(law_check_evaluate(tally).failed());
}

TEST(LawCheck, AnImpossibleTokenFailsWhateverTheBins) {
  LawCheckTally tally;
  for (int i = 0; i < 100; i++) tally.add_emitted(0, (i + 0.5) / 100);
  EXPECT_FALSE(law_check_evaluate(tally).failed());
  tally.impossible = 1;
  const LawCheckResult r = law_check_evaluate(tally);
  EXPECT_EQ(r.p_value, 0.0);
  EXPECT_TRUE(r.failed());
}

TEST(LawCheck, PositionsWithTooFewTokensAreNotTested) {
  LawCheckTally tally;
  for (int i = 0; i < 60; i++) tally.add_emitted(0, (i + 0.5) / 60);
  for (int i = 0; i < 10; i++) tally.add_emitted(1, 0.05);  // all in bin 0, but only 10
  const LawCheckResult r = law_check_evaluate(tally);
  ASSERT_EQ(r.p_value_by_position.size(), 2u);
  EXPECT_GT(r.p_value_by_position[0], 0.0);
  EXPECT_EQ(r.p_value_by_position[1], -1.0);
  EXPECT_EQ(r.tokens_by_position, (std::vector<int64_t>{60, 10}));
  EXPECT_EQ(r.n_tests, 2);  // overall (70 tokens) and position 1
}

// One degree of freedom (2 bins): X^2 = Z^2, so the chi-square's power at noncentrality
// lambda is P(|Z + sqrt(lambda)| > z_{1-a/2}), by hand.
double power_df1(double lambda, double alpha) {
  const double z = stats_normal_quantile(1 - alpha / 2);
  return stats_normal_sf(z - std::sqrt(lambda)) + stats_normal_sf(z + std::sqrt(lambda));
}

TEST(LawCheck, PowerFiguresMatchAHandComputationAtOneDegreeOfFreedom) {
  // lambda_80 at level 0.05: sqrt(lambda) = z_0.975 + z_0.8 = 1.959964 + 0.841621 (the other
  // tail adds ~1e-6), so lambda = 7.8489.
  const double l80 = law_noncentrality_for_power(1, 0.05, 0.8);
  EXPECT_NEAR(l80, 7.8489, 2e-3);
  EXPECT_NEAR(power_df1(l80, 0.05), 0.8, 1e-6);

  // A tally of 100 tokens on 2 bins, 60 / 40, all at position 1: two tests (overall and the
  // position), X^2 = 2 * 10^2 / 50 = 4 each, p = P(|Z| > 2) = 0.0455, Bonferroni 0.0910.
  LawCheckTally tally(2);
  for (int i = 0; i < 60; i++) tally.add_emitted(0, 0.25);
  for (int i = 0; i < 40; i++) tally.add_emitted(0, 0.75);
  // The drafts: 70 / 30 over 100 rounds of one draft each, so a verifier accepting every draft
  // emits a draft half the time (share k / (k + 1) = 1/2). Unbiased D = (100 * (0.49 + 0.09) -
  // 1) / 99 - 1/2 = 0.0757576; lambda = n B share^2 D = 100 * 2 * 0.25 * 0.0757576 = 3.78788.
  for (int i = 0; i < 70; i++) tally.add_drafted(0.1);
  for (int i = 0; i < 30; i++) tally.add_drafted(0.9);
  tally.rounds = 100;
  const LawCheckResult r = law_check_evaluate(tally, /*level=*/0.1);
  EXPECT_DOUBLE_EQ(r.statistic, 4.0);
  EXPECT_EQ(r.n_tests, 2);
  EXPECT_NEAR(r.p_value, 2 * 2 * stats_normal_sf(2.0), 1e-9);
  EXPECT_NEAR(r.p_value, 0.0910, 1e-4);
  // Each test at 0.1 / 2 = 0.05: lambda_80 as above, TV = sqrt(7.8489 / 400) = 0.14008.
  EXPECT_NEAR(r.noncentrality_80, l80, 1e-6);
  EXPECT_NEAR(r.min_detectable_tv, 0.14008, 1e-4);
  EXPECT_NEAR(law_accept_all_noncentrality(100, tally.draft_counts, 0.5), 3.78788, 1e-4);
  EXPECT_NEAR(r.power_accept_all, power_df1(3.78788, 0.05), 1e-4);
  EXPECT_NEAR(r.power_accept_all, 0.4946, 1e-3);
}

TEST(LawCheck, UniformDraftsGiveTheAlternativeNoNoncentrality) {
  // pi^ exactly uniform: the unbiased D is below 0 and clamps to 0.
  EXPECT_EQ(law_accept_all_noncentrality(1000, {25, 25, 25, 25}, 0.8), 0.0);
  EXPECT_EQ(law_accept_all_noncentrality(1000, {1, 0}, 0.8), 0.0);  // one draft: no estimate
}

}  // namespace
}  // namespace speclab
