// Closed forms of Leviathan et al. 2023, section 3, against the numbers printed in the paper
// (Table 1, Table 4's "EXP" column, section 3.5's "~60%") and against identities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/speedup_theory.h"

namespace speclab {
namespace {

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

TEST(SpeedupTheory, PaperTable1) {
  // Table 1 (c = c_hat = 0), transcribed from the paper: alpha, gamma, OPERATIONS, SPEED.
  struct Row {
    double alpha;
    int gamma;
    const char* ops;
    const char* speed;
  };
  const Row rows[] = {{0.6, 2, "1.53", "1.96"}, {0.7, 3, "1.58", "2.53"},
                      {0.8, 2, "1.23", "2.44"}, {0.8, 5, "1.63", "3.69"},
                      {0.9, 2, "1.11", "2.71"}, {0.9, 10, "1.60", "6.86"}};
  for (const Row& r : rows) {
    EXPECT_EQ(fixed2(theory_operations_factor(r.alpha, 0.0, r.gamma)), r.ops) << r.alpha;
    EXPECT_EQ(fixed2(theory_walltime_speedup(r.alpha, 0.0, r.gamma)), r.speed) << r.alpha;
  }
}

TEST(SpeedupTheory, PaperTable4ExpectedColumn) {
  // Table 4: gamma, alpha, c, EXP (Theorem 3.8 rounded to 0.1). The paper prints alpha and c to
  // two decimals but computed EXP from the unrounded values, so the printed EXP must lie between
  // Theorem 3.8 at (alpha - 0.005, c + 0.005) and (alpha + 0.005, c - 0.005), widened by the 0.05
  // of EXP's own rounding.
  struct Row {
    int gamma;
    double alpha, c, exp;
  };
  const Row rows[] = {{7, 0.75, 0.02, 3.2}, {7, 0.8, 0.04, 3.3},  {7, 0.82, 0.11, 2.5},
                      {7, 0.62, 0.02, 2.3}, {5, 0.68, 0.04, 2.4}, {3, 0.71, 0.11, 2.0},
                      {5, 0.65, 0.02, 2.4}, {5, 0.73, 0.04, 2.6}, {3, 0.74, 0.11, 2.0},
                      {5, 0.53, 0.02, 1.9}, {3, 0.55, 0.04, 1.8}, {3, 0.56, 0.11, 1.6}};
  int exact = 0;
  for (const Row& r : rows) {
    const double lo = theory_walltime_speedup(r.alpha - 0.005, r.c + 0.005, r.gamma);
    const double hi = theory_walltime_speedup(r.alpha + 0.005, r.c - 0.005, r.gamma);
    EXPECT_GE(r.exp, lo - 0.05 - 1e-12) << r.alpha << " " << r.gamma;
    EXPECT_LE(r.exp, hi + 0.05 + 1e-12) << r.alpha << " " << r.gamma;
    exact += std::fabs(std::round(theory_walltime_speedup(r.alpha, r.c, r.gamma) * 10) / 10 -
                       r.exp) < 1e-9;
  }
  EXPECT_GE(exact, 9);  // 9 of 12 rows match exactly at the printed alpha
}

TEST(SpeedupTheory, Eq1ClosedFormAndLimits) {
  for (double a : {0.0, 0.1, 0.5, 0.75, 0.9, 0.99}) {
    for (int g : {0, 1, 2, 5, 10, 40}) {
      const double closed = (1 - std::pow(a, g + 1)) / (1 - a);
      EXPECT_NEAR(theory_expected_tokens(a, g), closed, 1e-12 * closed) << a << " " << g;
    }
  }
  for (int g : {0, 1, 7}) {
    EXPECT_DOUBLE_EQ(theory_expected_tokens(1.0, g), g + 1.0);  // alpha -> 1 limit
    EXPECT_DOUBLE_EQ(theory_expected_tokens(0.0, g), 1.0);
  }
  // Near 1 the sum stays continuous with the limit.
  EXPECT_NEAR(theory_expected_tokens(1 - 1e-12, 5), 6.0, 1e-9);
}

TEST(SpeedupTheory, Theorem38And311Identities) {
  for (double a : {0.2, 0.6, 0.9}) {
    for (int g : {1, 3, 8}) {
      const double E = theory_expected_tokens(a, g);
      EXPECT_DOUBLE_EQ(theory_walltime_speedup(a, 0.0, g), E);
      EXPECT_NEAR(theory_walltime_speedup(a, 0.05, g), E / (1 + 0.05 * g), 1e-15);
      // With c = c_hat = 0, operations x speed = gamma + 1 (every round runs gamma+1 targets).
      EXPECT_NEAR(theory_operations_factor(a, 0.0, g) * theory_walltime_speedup(a, 0.0, g), g + 1.0,
                  1e-12);
      EXPECT_NEAR(theory_operations_factor(a, 0.1, g),
                  (1 - a) * (0.1 * g + g + 1) / (1 - std::pow(a, g + 1)), 1e-12);
    }
  }
  EXPECT_DOUBLE_EQ(theory_operations_factor(1.0, 0.0, 4), 1.0);  // nothing wasted
}

TEST(SpeedupTheory, Corollary39) {
  for (double a : {0.0, 0.05, 0.3, 0.6, 0.95}) {
    for (double c : {0.0, 0.02, 0.1, 0.5, 1.0}) {
      EXPECT_NEAR(theory_walltime_speedup(a, c, 1), theory_gamma1_speedup_bound(a, c), 1e-15);
      const OptimalGamma best = theory_optimal_gamma(a, c, 100);
      EXPECT_EQ(theory_gamma_improves(a, c), a > c);
      if (a > c) {
        EXPECT_GT(theory_gamma1_speedup_bound(a, c), 1.0);
        EXPECT_GE(best.speedup, theory_gamma1_speedup_bound(a, c));
      } else {
        EXPECT_LE(best.speedup, 1.0 + 1e-15) << a << " " << c;
      }
      // The proof's monotonicity: improvement at gamma implies improvement at every gamma' < gamma.
      for (int g = 2; g <= 30; ++g)
        if (theory_walltime_speedup(a, c, g) > 1.0) {
          EXPECT_GT(theory_walltime_speedup(a, c, g - 1), 1.0) << a << " " << c << " " << g;
        }
    }
  }
}

TEST(SpeedupTheory, OptimalGammaMatchesBruteForce) {
  for (double a = 0.05; a < 0.995; a += 0.05) {
    for (double c : {0.01, 0.02, 0.05, 0.1, 0.3}) {
      int arg = 1;
      double best = theory_walltime_speedup(a, c, 1);
      for (int g = 2; g <= 1000; ++g)
        if (theory_walltime_speedup(a, c, g) > best)
          best = theory_walltime_speedup(a, c, g), arg = g;
      const OptimalGamma o = theory_optimal_gamma(a, c, 1000);
      EXPECT_EQ(o.gamma, arg) << a << " " << c;
      EXPECT_DOUBLE_EQ(o.speedup, best);
      EXPECT_FALSE(o.capped);
    }
  }
  // c = 0: the speedup rises with gamma, the answer is the cap.
  const OptimalGamma o = theory_optimal_gamma(0.8, 0.0, 12);
  EXPECT_EQ(o.gamma, 12);
  EXPECT_TRUE(o.capped);
  // Hand-checked point, alpha 0.8, c 0.05: speedup(6..10) = 3.0396, 3.0823, 3.0921, 3.0780, 3.0470.
  EXPECT_EQ(theory_optimal_gamma(0.8, 0.05, 100).gamma, 8);
}

TEST(SpeedupTheory, OracleBound) {
  EXPECT_DOUBLE_EQ(theory_oracle_expected_tokens(0.8), 5.0);
  EXPECT_NEAR(theory_oracle_speedup(0.8, 0.05), 1.0 / (0.2 + 0.04), 1e-15);
  // The oracle is never worse than the best fixed gamma, and equals 1/(1-alpha) at c = 0, the
  // limit of Eq. (1) as gamma -> infinity.
  double max_ratio = 0.0;
  for (double a = 0.5; a < 0.995; a += 0.01) {
    EXPECT_DOUBLE_EQ(theory_oracle_speedup(a, 0.0), theory_oracle_expected_tokens(a));
    for (double c = 0.01; c < 0.0505; c += 0.01) {
      const double fixed = theory_optimal_gamma(a, c, 5000).speedup;
      EXPECT_GE(theory_oracle_speedup(a, c), fixed) << a << " " << c;
      max_ratio = std::max(max_ratio, theory_oracle_speedup(a, c) / fixed);
    }
  }
  // Section 3.5: "for typical values of c and alpha ... up to ~60% higher".
  EXPECT_GT(max_ratio, 1.5);
  EXPECT_LT(max_ratio, 1.65);
}

TEST(SpeedupTheory, RefinedReducesToTheorem38) {
  const int G = 12;
  for (double a : {0.3, 0.7, 0.9}) {
    for (double c : {0.0, 0.02, 0.2}) {
      RefinedCostModel m;
      m.accept_cond.assign(G, a);
      const double T1 = 0.037;  // seconds; any value cancels
      m.target_seconds.assign(G + 1, T1);
      m.draft_seconds_per_token = c * T1;
      for (int g = 1; g <= G; ++g) {
        EXPECT_NEAR(theory_refined_expected_tokens(m.accept_cond, g), theory_expected_tokens(a, g),
                    1e-13);
        EXPECT_NEAR(theory_refined_speedup(m, g), theory_walltime_speedup(a, c, g), 1e-12)
            << a << " " << c << " " << g;
      }
      const OptimalGamma o = theory_refined_optimal_gamma(m);
      EXPECT_EQ(o.gamma, theory_optimal_gamma(a, c, G).gamma);
    }
  }
}

TEST(SpeedupTheory, RefinedHandExample) {
  RefinedCostModel m;
  m.accept_cond = {0.9, 0.5};
  m.target_seconds = {1.0, 1.1, 1.3};
  m.draft_seconds_per_token = 0.1;
  m.draft_catchup_seconds = 0.05;
  m.round_overhead_seconds = 0.01;
  // E(2) = 1 + 0.9 + 0.45; round(2) = 2 * 0.1 + T(3) + 0.45 * 0.05 + 0.01.
  EXPECT_NEAR(theory_refined_expected_tokens(m.accept_cond, 2), 2.35, 1e-15);
  EXPECT_NEAR(theory_refined_round_seconds(m, 2), 0.2 + 1.3 + 0.0225 + 0.01, 1e-15);
  EXPECT_NEAR(theory_refined_speedup(m, 2), 2.35 / 1.5325, 1e-15);
  EXPECT_NEAR(theory_refined_speedup(m, 1), 1.9 / (0.1 + 1.1 + 0.9 * 0.05 + 0.01), 1e-15);
  // Bad fields name themselves.
  RefinedCostModel bad = m;
  bad.accept_cond[1] = 1.5;
  EXPECT_THROW(theory_refined_speedup(bad, 1), InputError);
  bad = m;
  bad.target_seconds.pop_back();
  EXPECT_THROW(theory_refined_speedup(bad, 1), InputError);
  EXPECT_THROW(theory_refined_speedup(m, 3), InputError);  // beyond the measured positions
}

TEST(SpeedupTheory, MemoryTraffic) {
  MemoryModel m;
  m.target_weight_bytes = 2.4e9;
  m.target_kv_bytes = 0.1e9;
  m.draft_weight_bytes = 0.2e9;
  m.draft_kv_bytes = 0.05e9;
  const int g = 4;
  const double E = theory_expected_tokens(0.8, g);  // 3.3616
  const MemoryTraffic t = theory_memory_traffic(m, E, g);
  EXPECT_DOUBLE_EQ(t.baseline_bytes_per_token, 2.5e9);
  EXPECT_NEAR(t.speculative_bytes_per_token, (4 * 0.25e9 + 2.5e9) / E, 1e-3);
  EXPECT_NEAR(t.ratio, 3.5 / 2.5 / E, 1e-12);
  // A free drafter: the target's traffic shrinks by exactly Eq. (1) (section 3.4).
  m.draft_weight_bytes = m.draft_kv_bytes = 0;
  EXPECT_NEAR(theory_memory_traffic(m, E, g).ratio, 1.0 / E, 1e-15);
  EXPECT_THROW(theory_memory_traffic(m, 6.0, g), InputError);  // more than gamma + 1 tokens
}

TEST(SpeedupTheory, BadArgumentsThrow) {
  EXPECT_THROW(theory_expected_tokens(-0.1, 2), InputError);
  EXPECT_THROW(theory_expected_tokens(1.1, 2), InputError);
  EXPECT_THROW(theory_expected_tokens(0.5, -1), InputError);
  EXPECT_THROW(theory_walltime_speedup(0.5, -0.01, 2), InputError);
  EXPECT_THROW(theory_optimal_gamma(0.5, 0.1, 0), InputError);
  EXPECT_THROW(theory_oracle_expected_tokens(1.0), InputError);
}

}  // namespace
}  // namespace speclab
