// Counter-based RNG: known answers, determinism, uniformity, independence of neighbours.
// Statistical tests here use significance alpha = 1e-3 with fixed seeds (so the suite is
// deterministic; alpha is the chance that a correct generator fails for a given seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "core/stats.h"

namespace speclab {
namespace {

constexpr double kAlpha = 1e-3;

TEST(Rng, PhiloxKnownAnswers) {
  // Random123 kat_vectors: counter[4] key[2] -> output[4].
  struct Kat {
    std::array<uint32_t, 4> ctr;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) EXPECT_EQ(rng_philox4x32_10(k.ctr, k.key), k.out);
}

TEST(Rng, DeterministicAndOrderFree) {
  const RngKey a{42, 7, 1000, kRngAcceptTest, 0};
  const double u = rng_uniform(a);
  // Draw many other numbers in between: a pure function does not care.
  for (uint64_t pos = 0; pos < 1000; pos++) (void)rng_uniform(rng_key_at(a, pos, kRngBonusSample));
  EXPECT_EQ(rng_uniform(a), u);
  // Each key field changes the draw.
  RngKey b = a;
  b.seed++;
  EXPECT_NE(rng_uniform(b), u);
  b = a;
  b.request++;
  EXPECT_NE(rng_uniform(b), u);
  b = a;
  b.position++;
  EXPECT_NE(rng_uniform(b), u);
  b = a;
  b.stream++;
  EXPECT_NE(rng_uniform(b), u);
  b = a;
  b.index++;
  EXPECT_NE(rng_uniform(b), u);
  b = a;
  b.position += uint64_t(1) << 32;  // the high half of the position counts too
  EXPECT_NE(rng_uniform(b), u);
}

TEST(Rng, UniformChiSquareAndKs) {
  // 200k draws over consecutive positions into 100 bins: chi-square at alpha = 1e-3, and
  // Kolmogorov-Smirnov: sqrt(n) D < 1.949 (the asymptotic 1 - 1e-3 quantile).
  const int n = 200000, bins = 100;
  std::vector<int64_t> counts(bins, 0);
  std::vector<double> u(n);
  for (int i = 0; i < n; i++) {
    u[i] = rng_uniform({1, 2, static_cast<uint64_t>(i), kRngTest, 0});
    ASSERT_GE(u[i], 0.0);
    ASSERT_LT(u[i], 1.0);
    counts[static_cast<int>(u[i] * bins)]++;
  }
  const GofResult g = stats_chi2_gof(counts, std::vector<double>(bins, 1.0 / bins));
  std::printf("uniform chi2 = %.2f df = %d p = %.4f\n", g.statistic, g.df, g.p_value);
  EXPECT_GT(g.p_value, kAlpha);

  std::sort(u.begin(), u.end());
  double d = 0.0;
  for (int i = 0; i < n; i++) {
    d = std::max(d, std::max((i + 1.0) / n - u[i], u[i] - static_cast<double>(i) / n));
  }
  std::printf("KS sqrt(n) D = %.4f (critical 1.949)\n", std::sqrt(n) * d);
  EXPECT_LT(std::sqrt(n) * d, 1.949);
}

TEST(Rng, NeighbouringCountersIndependent) {
  // Pairs (u at position t, u at position t + 1), and (index 0, index 1), and (stream s,
  // stream s + 1) must be uniform on the unit square: chi-square over a 10 x 10 grid at
  // alpha = 1e-3, 100k pairs (expected 1000 per cell). A serial correlation of 0.02
  // would already show, and lag-1 correlation is checked by |r| < 4.4 / sqrt(n).
  const int n = 100000, g = 10;
  const RngKey base{9, 3, 0, kRngDraftSample, 0};
  auto neighbours = [&](auto make_pair, const char* what) {
    std::vector<int64_t> counts(g * g, 0);
    double sxy = 0.0;
    for (int t = 0; t < n; t++) {
      const auto [x, y] = make_pair(t);
      counts[static_cast<int>(x * g) * g + static_cast<int>(y * g)]++;
      sxy += (x - 0.5) * (y - 0.5);
    }
    const double r = sxy / n / (1.0 / 12.0);
    const GofResult res = stats_chi2_gof(counts, std::vector<double>(g * g, 1.0 / (g * g)));
    std::printf("%s: chi2 = %.1f df = %d p = %.4f, corr = %.5f\n", what, res.statistic, res.df,
                res.p_value, r);
    EXPECT_GT(res.p_value, kAlpha) << what;
    EXPECT_LT(std::fabs(r), 4.4 / std::sqrt(n)) << what;  // 3.29 sd two-sided is alpha=1e-3
  };
  neighbours(
      [&](int t) {
        return std::make_pair(rng_uniform(rng_key_at(base, t, kRngDraftSample)),
                              rng_uniform(rng_key_at(base, t + 1, kRngDraftSample)));
      },
      "position t vs t+1");
  neighbours(
      [&](int t) {
        return std::make_pair(rng_uniform(rng_key_at(base, t, kRngAcceptTest, 0)),
                              rng_uniform(rng_key_at(base, t, kRngAcceptTest, 1)));
      },
      "index 0 vs 1");
  neighbours(
      [&](int t) {
        return std::make_pair(rng_uniform(rng_key_at(base, t, kRngAcceptTest)),
                              rng_uniform(rng_key_at(base, t, kRngResidualSample)));
      },
      "accept vs residual stream");
  neighbours(
      [&](int t) {
        RngKey a = rng_key_at(base, 5, kRngAcceptTest), b = a;
        a.request = t;
        b.request = t + 1;
        return std::make_pair(rng_uniform(a), rng_uniform(b));
      },
      "request r vs r+1");
}

}  // namespace
}  // namespace speclab
