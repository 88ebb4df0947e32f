// The law of EVERY emitted token of a round, at the verifier level: chain rounds with gamma
// 1..8 (positions 1..gamma+1: each draft position, its correction and the bonus) and tree
// rounds of depth 3 and 4, top-k and sampled (depths 1..D+1), against the exact law of a
// second-order Markov target (tests/exactness/verify_exactness.h).
//
// Statistics, per position j: Pearson chi-square of the observed triples
// (t_{j-2}, t_{j-1}, t_j) against their exact law, at significance kAlpha = 1e-4 per
// position (a family of about 100 position tests in this file stays below 1% family-wise,
// Bonferroni); with kTrials = 250000 sequences, the power against ANY law at total
// variation 0.01 from the exact one is >= stats_chi2_power(df, 4 n 0.01^2 = 100, 1e-4),
// which is >= 0.97 at df = 63 (the triples of vocab 4) and is printed and asserted >= 0.9
// per position. The Markov laws keep every probability >= 0.025, so no bin is pooled.
//
// Planted wrong laws (test-only verifier variants wrapping the product verifier) are
// rejected at the planted position with p < 1e-9 and NOT flagged at any earlier position:
// the correction at the last draft position of gamma = 8, at a middle one, the bonus drawn
// from the wrong row, and a tree correction at depth 2 and at depth 3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "core/stats.h"
#include "core/token_tree.h"
#include "core/tree_verify.h"
#include "tests/exactness/exactness_position_check.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace {

// kVocab, kAlpha, kTv, kTrials, expect_exact, expect_rejected_at
using namespace testing::position_check;  // NOLINT(build/namespaces)

const MarkovPair& close_pair() {
  static const MarkovPair m = exactness_random_markov_pair(kVocab, 1, 3.0, 0.7, 0.7);
  return m;
}
const MarkovPair& far_pair() {
  static const MarkovPair m = exactness_random_markov_pair(kVocab, 2, 2.0, 2.0, 4.0);
  return m;
}

PositionCounts chain_counts(const VerifierFn& verifier, const MarkovPair& m, int gamma,
                            bool deterministic, uint64_t seed) {
  return exactness_chain_positions(verifier, m, gamma, deterministic, VerifyConfig{}, gamma + 1,
                                   kTrials, seed);
}

TEST(ExactnessPositions, PowerAgainstOnePercentTv) {
  // The sizing above, computed: df 3 (position 1), 15 (position 2), 63 (positions >= 3).
  const double lambda = 4.0 * kTrials * kTv * kTv;
  for (int df : {3, 15, 63}) {
    const double power = stats_chi2_power(df, lambda, kAlpha);
    std::printf("df %d: critical %.1f, lambda >= %.0f, power >= %.4f\n", df,
                stats_chi2_quantile(1 - kAlpha, df), lambda, power);
    EXPECT_GE(power, 0.97);
  }
}

struct ChainCase {
  const char* name;
  int gamma;
  bool far;
  bool deterministic;
};

TEST(ExactnessPositions, ChainEveryPosition) {
  const ChainCase cases[] = {
      {"gamma 1 close", 1, false, false}, {"gamma 2 far", 2, true, false},
      {"gamma 4 close", 4, false, false}, {"gamma 8 close", 8, false, false},
      {"gamma 8 far", 8, true, false},    {"gamma 8 deterministic", 8, false, true},
  };
  uint64_t seed = 100;  // a seed per case: the cases are independent evidence
  for (const ChainCase& c : cases) {
    const MarkovPair& m = c.far ? far_pair() : close_pair();
    expect_exact(c.name, m, chain_counts(speculative_verify, m, c.gamma, c.deterministic, seed++));
  }
}

TEST(ExactnessPositions, CloseDraftReachesTheLastPosition) {
  // The plants at the last draft position only matter if rounds get there: with the close
  // pair, P(all 7 first drafts accepted) is about alpha^7.
  const MarkovPair& m = close_pair();
  double a = 0;
  for (int b = 0; b < kVocab; b++)
    a += verify_expected_acceptance(m.p_row(0, b), m.q_row(b), kVocab, 1.0) / kVocab;
  std::printf("close pair: mean acceptance %.3f, alpha^7 %.3f\n", a, std::pow(a, 7));
  EXPECT_GT(std::pow(a, 7), 0.2);
}

// Test-only verifier variants: the product verifier with one deliberate mistake.
// The correction at draft index `at` (emitted position at + 1) drawn from p_at instead of
// norm(max(0, p_at - q_at)).
VerifierFn plant_correction_from_p(int at) {
  return [at](const VerifyRound& r, const VerifyConfig& c, RngKey base) {
    VerifyOutcome o = speculative_verify(r, c, base);
    if (!o.bonus && o.n_accepted == at)
      o.next_token =
          sampling_draw(r.p + at * r.vocab, r.vocab,
                        rng_uniform(rng_key_at(base, base.position + at, kRngResidualSample)));
    return o;
  };
}

// The bonus (position gamma + 1) drawn from the row of the last draft, p_{gamma-1}.
VerifyOutcome plant_bonus_from_last_draft_row(const VerifyRound& r, const VerifyConfig& c,
                                              RngKey base) {
  VerifyOutcome o = speculative_verify(r, c, base);
  if (o.bonus)
    o.next_token =
        sampling_draw(r.p + (r.n_draft - 1) * r.vocab, r.vocab,
                      rng_uniform(rng_key_at(base, base.position + r.n_draft, kRngBonusSample)));
  return o;
}

TEST(ExactnessPositions, PlantAtLastDraftPositionIsRejected) {
  expect_rejected_at("plant: correction from p at draft 8 of 8", close_pair(),
                     chain_counts(plant_correction_from_p(7), close_pair(), 8, false, 12), 8);
}

TEST(ExactnessPositions, PlantAtMiddleDraftPositionIsRejected) {
  expect_rejected_at("plant: correction from p at draft 4 of 8", close_pair(),
                     chain_counts(plant_correction_from_p(3), close_pair(), 8, false, 13), 4);
}

TEST(ExactnessPositions, PlantInBonusIsRejected) {
  expect_rejected_at("plant: bonus from the last draft's row, gamma 8", close_pair(),
                     chain_counts(plant_bonus_from_last_draft_row, close_pair(), 8, false, 14), 9);
}

struct TreeCase {
  const char* name;
  const char* shape;
  bool far;
};

PositionCounts tree_counts(const TreeVerifierFn& verifier, const MarkovPair& m,
                           const TreeShape& shape, uint64_t seed) {
  return exactness_tree_positions(verifier, m, shape, shape.depth() + 1, kTrials, seed);
}

TEST(ExactnessPositions, TreeEveryDepth) {
  const TreeCase cases[] = {
      {"tree 2x2x2 sampled, close", "2x2x2:sample", false},
      {"tree 2x2x2 sampled, far", "2x2x2:sample", true},
      {"tree 3x2x1 top-k, far", "3x2x1:topk", true},
      {"tree 2x2x1x1 top-k, close", "2x2x1x1:topk", false},
      {"tree 3x1x1x1 sampled, far", "3x1x1x1:sample", true},
  };
  uint64_t seed = 200;
  for (const TreeCase& c : cases) {
    const MarkovPair& m = c.far ? far_pair() : close_pair();
    const TreeShape shape = tree_shape_parse(c.shape, "test");
    expect_exact(c.name, m, tree_counts(tree_verify, m, shape, seed++));
  }
}

// The correction after every child of a depth-(depth-1) node was rejected (emitted at tree
// depth `depth`) drawn from p of that node instead of the residual.
TreeVerifierFn plant_tree_correction_from_p(int depth) {
  return [depth](const DraftTree& t, const float* p, int64_t V, bool greedy, RngKey base) {
    TreeVerifyOutcome o = tree_verify(t, p, V, greedy, base);
    if (!o.bonus && static_cast<int>(o.path.size()) == depth - 1) {
      const int32_t node = o.path.empty() ? 0 : o.path.back();
      o.next_token = sampling_draw(
          p + node * V, V,
          rng_uniform(rng_key_at(base, base.position + depth - 1, kRngResidualSample, node)));
    }
    return o;
  };
}

TEST(ExactnessPositions, PlantAtTreeDepth2IsRejected) {
  const TreeShape shape = tree_shape_parse("2x2x2:sample", "test");
  expect_rejected_at("plant: sampled tree, correction from p at depth 2", far_pair(),
                     tree_counts(plant_tree_correction_from_p(2), far_pair(), shape, 22), 2);
}

TEST(ExactnessPositions, PlantAtTreeDepth3IsRejected) {
  const TreeShape shape = tree_shape_parse("3x2x1:topk", "test");
  expect_rejected_at("plant: top-k tree, correction from p at depth 3", far_pair(),
                     tree_counts(plant_tree_correction_from_p(3), far_pair(), shape, 23), 3);
}

}  // namespace
}  // namespace speclab
