// Statistics against known values (tables of the chi-square and normal distributions,
// computed with scipy.stats: chi2.sf, chi2.ppf, norm.ppf) and self-consistency.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "core/rng.h"
#include "core/stats.h"

namespace speclab {
namespace {

TEST(Stats, Chi2SurvivalClosedForms) {
  // Closed forms: df = 2: exp(-x/2); df = 1: erfc(sqrt(x/2)); df = 4: exp(-x/2)(1 + x/2);
  // df = 3: erfc(sqrt(x/2)) + sqrt(2x/pi) exp(-x/2). Even df = 2m: exp(-x/2) sum_{j<m} (x/2)^j/j!.
  const double xs[] = {0.01, 0.5, 1.0, 3.84, 7.5, 15.0, 30.0, 60.0, 150.0};
  for (double x : xs) {
    EXPECT_NEAR(stats_chi2_sf(x, 1), std::erfc(std::sqrt(x / 2)), 1e-10) << x;
    EXPECT_NEAR(stats_chi2_sf(x, 3),
                std::erfc(std::sqrt(x / 2)) + std::sqrt(2 * x / M_PI) * std::exp(-x / 2), 1e-10)
        << x;
    for (int m : {1, 2, 3, 4, 5, 50}) {  // df = 2, 4, 6, 8, 10, 100
      double term = 1.0, sum = 0.0;
      for (int j = 0; j < m; j++) {
        sum += term;
        term *= (x / 2) / (j + 1);
      }
      EXPECT_NEAR(stats_chi2_sf(x, 2 * m), std::exp(-x / 2) * sum, 1e-10) << x << " df " << 2 * m;
    }
  }
}

TEST(Stats, Chi2TableValues) {
  // scipy.stats.chi2.ppf(0.999, df) for df = 1..10 and chi2.sf at those points = 1e-3;
  // also chi2.ppf(0.95, df).
  const double q999[] = {10.827566170662733, 13.815510557964274, 16.26623619623813,
                         18.46682695290317,  20.515005652432873, 22.457744484825323,
                         24.321886347856854, 26.12448155837614,  27.877164871256568,
                         29.58829844507442};
  const double q95[] = {3.841458820694124,  5.991464547107979,  7.814727903251178,
                        9.487729036781154,  11.070497693516351, 12.591587243743977,
                        14.067140449340169, 15.50731305586545,  16.918977604620448,
                        18.307038053275146};
  for (int df = 1; df <= 10; df++) {
    EXPECT_NEAR(stats_chi2_sf(q999[df - 1], df), 1e-3, 1e-9) << df;
    EXPECT_NEAR(stats_chi2_sf(q95[df - 1], df), 0.05, 1e-9) << df;
    EXPECT_NEAR(stats_chi2_quantile(0.999, df), q999[df - 1], 1e-6) << df;
    EXPECT_NEAR(stats_chi2_quantile(0.95, df), q95[df - 1], 1e-6) << df;
  }
}

TEST(Stats, SampleQuantilesInterpolateBetweenOrderStatistics) {
  // Unsorted on purpose: 1, 2, 4, 10 sorted; position q * 3.
  const std::vector<double> v = {10.0, 2.0, 4.0, 1.0};
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.5), 3.0);    // halfway from 2 to 4
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.25), 1.75);  // position 0.75: 1 + 0.75 * (2 - 1)
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.9), 8.2);    // position 2.7: 4 + 0.7 * (10 - 4)
  EXPECT_DOUBLE_EQ(stats_quantile({7.0}, 0.75), 7.0);
  EXPECT_DOUBLE_EQ(stats_quantile({}, 0.5), 0.0);
}

TEST(Stats, NormalQuantiles) {
  EXPECT_NEAR(stats_normal_quantile(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(stats_normal_quantile(0.9995), 3.2905267314918945, 1e-9);
  EXPECT_NEAR(stats_normal_quantile(0.5), 0.0, 1e-12);
  EXPECT_NEAR(stats_normal_sf(1.959963984540054), 0.025, 1e-12);
}

TEST(Stats, Chi2PowerKnownCases) {
  // lambda = 0: power = alpha exactly. df = 1: X' = (Z + sqrt(lambda))^2, so power =
  // P(|Z + sqrt(lambda)| > z_{1-alpha/2}) in closed form.
  EXPECT_NEAR(stats_chi2_power(5, 0.0, 0.01), 0.01, 1e-9);
  for (double lambda : {1.0, 4.0, 10.0, 25.0}) {
    const double z = stats_normal_quantile(1 - 0.005), s = std::sqrt(lambda);
    const double expect = stats_normal_sf(z - s) + stats_normal_sf(z + s);
    EXPECT_NEAR(stats_chi2_power(1, lambda, 0.01), expect, 1e-8) << lambda;
  }
}

TEST(Stats, GoodnessOfFitPoolingAndImpossibleBins) {
  // Expected counts 50, 30, 15, 3, 2 (n = 100): the last two (< 5) are pooled into one bin
  // of 5, so 4 bins, df = 3. X^2 by hand: (52-50)^2/50 + (28-30)^2/30 + (14-15)^2/15 +
  // (6-5)^2/5 = 0.08 + 0.13333 + 0.066667 + 0.2 = 0.48.
  const std::vector<int64_t> obs = {52, 28, 14, 4, 2};
  const std::vector<double> prob = {0.5, 0.3, 0.15, 0.03, 0.02};
  const GofResult g = stats_chi2_gof(obs, prob);
  EXPECT_EQ(g.n_bins, 4);
  EXPECT_EQ(g.df, 3);
  EXPECT_NEAR(g.statistic, 0.48, 1e-12);
  EXPECT_NEAR(g.p_value, stats_chi2_sf(0.48, 3), 1e-15);
  // G = 2 sum O ln(O/E) over the same pooled bins.
  const double gexp = 2 * (52 * std::log(52 / 50.0) + 28 * std::log(28 / 30.0) +
                           14 * std::log(14 / 15.0) + 6 * std::log(6 / 5.0));
  EXPECT_NEAR(stats_g_test(obs, prob).statistic, gexp, 1e-12);
  // A count where the probability is 0 is impossible.
  const GofResult imp = stats_chi2_gof({50, 49, 1}, {0.5, 0.5, 0.0});
  EXPECT_EQ(imp.p_value, 0.0);
  EXPECT_EQ(stats_chi2_gof({50, 50, 0}, {0.5, 0.5, 0.0}).df, 1);
}

TEST(Stats, ChiSquareCalibratedUnderNull) {
  // Under the null, p-values are uniform: over 2000 simulated multinomial samples (n = 500,
  // 6 bins) the fraction with p < 0.05 must be inside the Wilson 1e-3 interval around 0.05
  // (i.e. 0.05 must be in the interval of the observed fraction).
  const std::vector<double> prob = {0.05, 0.1, 0.15, 0.2, 0.2, 0.3};
  int rejections = 0;
  const int reps = 2000;
  for (int r = 0; r < reps; r++) {
    std::vector<int64_t> counts(prob.size(), 0);
    for (int i = 0; i < 500; i++) {
      double u = rng_uniform({11, uint64_t(r), uint64_t(i), kRngTest, 0}), c = 0;
      size_t k = 0;
      while (k + 1 < prob.size() && u >= (c += prob[k])) k++;
      counts[k]++;
    }
    rejections += stats_chi2_gof(counts, prob).p_value < 0.05;
  }
  const Interval ci = stats_wilson_interval(rejections, reps, 1e-3);
  std::printf("null rejection rate at 0.05: %.4f [%.4f, %.4f]\n", double(rejections) / reps, ci.lo,
              ci.hi);
  EXPECT_TRUE(ci.contains(0.05));
}

TEST(Stats, MeanVarianceIntervals) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(stats_mean(v), 5.0);
  EXPECT_NEAR(stats_variance(v), 32.0 / 7.0, 1e-12);
  // Wilson, 40 of 100, 95%: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n) with
  // z = 1.959964 evaluates by hand to [0.3094013, 0.4979974].
  const Interval w = stats_wilson_interval(40, 100, 0.05);
  EXPECT_NEAR(w.lo, 0.3094013, 1e-6);
  EXPECT_NEAR(w.hi, 0.4979974, 1e-6);
  const Interval m = stats_mean_interval(v, 0.05);
  EXPECT_NEAR(m.lo, 5.0 - 1.959963984540054 * std::sqrt(32.0 / 7.0 / 8.0), 1e-9);
}

TEST(Stats, BootstrapCoversAndIsSeeded) {
  // Mean of 400 exponential(1) values: the 99% bootstrap interval should roughly match the
  // normal interval (same center, width within 20%), and be identical for the same seed.
  std::vector<double> v(400);
  for (size_t i = 0; i < v.size(); i++) v[i] = -std::log1p(-rng_uniform({4, 0, i, kRngTest, 0}));
  auto mean = [](const std::vector<double>& x) { return stats_mean(x); };
  const Interval b = stats_bootstrap_interval(v, mean, 2000, 0.01, 77);
  const Interval b2 = stats_bootstrap_interval(v, mean, 2000, 0.01, 77);
  const Interval n = stats_mean_interval(v, 0.01);
  std::printf("bootstrap [%.4f, %.4f] normal [%.4f, %.4f]\n", b.lo, b.hi, n.lo, n.hi);
  EXPECT_EQ(b.lo, b2.lo);
  EXPECT_EQ(b.hi, b2.hi);
  EXPECT_NEAR(b.hi - b.lo, n.hi - n.lo, 0.2 * (n.hi - n.lo));
  EXPECT_NEAR(0.5 * (b.lo + b.hi), stats_mean(v), 0.1 * (n.hi - n.lo));
}

}  // namespace
}  // namespace speclab

namespace speclab {
namespace {

// Repeats of one prompt are not independent draws: resampled as clusters, 10 prompts with 5
// identical repeats each give an interval about sqrt(5) times wider than the 50 values
// resampled one by one (which would overstate the evidence).
TEST(Stats, ClusterBootstrapKeepsRepeatsTogether) {
  std::vector<double> per_cluster, flat;
  for (int c = 0; c < 10; c++) {
    per_cluster.push_back(c % 2 ? 1.0 : 2.0 + 0.1 * c);
    for (int r = 0; r < 5; r++) flat.push_back(per_cluster.back());
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  const Interval naive = stats_bootstrap_interval(flat, mean, 2000, 0.05, 3);
  const Interval clustered = stats_cluster_bootstrap_interval(
      per_cluster.size(),
      [&](const std::vector<size_t>& picks) {
        double s = 0;
        for (size_t i : picks) s += 5 * per_cluster[i];
        return s / (5.0 * static_cast<double>(picks.size()));
      },
      2000, 0.05, 3);
  EXPECT_TRUE(clustered.contains(mean(flat)));
  const double ratio = (clustered.hi - clustered.lo) / (naive.hi - naive.lo);
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 2.8);
  // A statistic that is never defined gives no interval.
  const Interval none = stats_cluster_bootstrap_interval(
      3, [](const std::vector<size_t>&) { return NAN; }, 10, 0.05, 1);
  EXPECT_TRUE(std::isnan(none.lo));
}

}  // namespace
}  // namespace speclab
