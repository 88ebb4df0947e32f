// The per-position exactness check shared by the verifier-level (tests/core) and the
// decoder-level (tests/decode) position tests: Pearson chi-square of every emitted position's
// triples (t_{j-2}, t_{j-1}, t_j) against the exact law of a second-order Markov target
// (tests/exactness/verify_exactness.h), at kAlpha per position, with the power against any law at
// total variation kTv printed and asserted.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/exactness/verify_exactness.h"

namespace speclab::testing::position_check {

constexpr int64_t kVocab = 4;        // the Markov pairs' vocabulary
constexpr double kAlpha = 1e-4;      // significance per position
constexpr double kTv = 0.01;         // the error the power is stated against
constexpr int64_t kTrials = 250000;  // sequences per case

// Runs the per-position tests against law's exact triple laws, prints them, returns them.
inline std::vector<PositionTest> position_tests(const std::string& name, const MarkovPair& law,
                                                const PositionCounts& counts) {
  const auto laws = exactness_markov_triple_laws(law, static_cast<int>(counts.triples.size()));
  const auto tests = exactness_position_tests(counts, laws, kAlpha, kTv);
  std::printf("%s: %lld sequences, level %.0e per position\n", name.c_str(),
              static_cast<long long>(counts.n_sequences), kAlpha);
  for (const PositionTest& t : tests)
    std::printf("  position %d: chi2 %8.1f df %2d p %.3g  power(tv %.2f) %.3f\n", t.position,
                t.gof.statistic, t.gof.df, t.gof.p_value, kTv, t.power);
  return tests;
}

// Every position passes at kAlpha with power >= 0.9; unpooled: vocab bins at position
// 1, vocab^2 at 2, vocab^3 after (the Markov laws keep every probability >= 0.025).
inline void expect_exact(const std::string& name, const MarkovPair& law,
                         const PositionCounts& counts) {
  for (const PositionTest& t : position_tests(name, law, counts)) {
    EXPECT_GT(t.gof.p_value, kAlpha) << name << " position " << t.position;
    const int64_t v = kVocab;
    const int64_t cells = t.position == 1 ? v : t.position == 2 ? v * v : v * v * v;
    EXPECT_EQ(t.gof.n_bins, cells) << name << " position " << t.position;
    EXPECT_GE(t.power, 0.9) << name << " position " << t.position;
  }
}

// A plant must pass every position before `planted` and be rejected at `planted` (p < 1e-9).
inline void expect_rejected_at(const std::string& name, const MarkovPair& law,
                               const PositionCounts& counts, int planted) {
  const auto tests = position_tests(name, law, counts);
  ASSERT_GE(static_cast<int>(tests.size()), planted);
  for (int j = 1; j < planted; j++)
    EXPECT_GT(tests[j - 1].gof.p_value, kAlpha) << name << " position " << j;
  EXPECT_LT(tests[planted - 1].gof.p_value, 1e-9) << name << " position " << planted;
}

}  // namespace speclab::testing::position_check
