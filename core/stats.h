// Statistics for acceptance measurements and exactness tests.
//
// Goodness of fit: chi-square (Pearson) and G-test (likelihood ratio) with bins of
// expected count < 5 pooled, p-values from the regularized incomplete gamma function.
// Intervals: Wilson score interval for a binomial proportion, normal interval for a mean,
// percentile bootstrap over per-item values (seeded with the counter RNG).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace speclab {

struct Interval {
  double lo = 0.0, hi = 0.0;
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// Regularized lower / upper incomplete gamma P(a, x), Q(a, x) = 1 - P(a, x); a > 0, x >= 0.
double stats_gamma_p(double a, double x);
double stats_gamma_q(double a, double x);

// Chi-square distribution with df degrees of freedom: survival P(X > x) and the quantile
// x with P(X <= x) = prob (bisection on the survival, to 1e-10 relative).
double stats_chi2_sf(double x, double df);
double stats_chi2_quantile(double prob, double df);

// Power of a level-alpha chi-square test with df degrees of freedom against a
// non-central chi-square with noncentrality lambda: P(X'_{df,lambda} > chi2_{1-alpha,df}),
// summed as a Poisson(lambda/2) mixture of central chi-squares. For a multinomial
// goodness-of-fit test with n draws, lambda = n * sum_x (p1(x) - p0(x))^2 / p0(x); a total
// variation distance delta forces lambda >= 4 n delta^2 (Cauchy-Schwarz), whatever the shape.
double stats_chi2_power(double df, double lambda, double alpha);

// Standard normal: survival P(Z > z) and quantile (inverse CDF) for prob in (0, 1).
double stats_normal_sf(double z);
double stats_normal_quantile(double prob);

struct GofResult {
  double statistic = 0.0;  // X^2 or G
  int df = 0;              // bins used - 1
  double p_value = 1.0;    // 0 when a bin of probability 0 was observed
  int n_bins = 0;          // after pooling
};

// observed[k] counts against expected_prob[k] (need not be normalized exactly; it is
// rescaled to sum to 1). Bins with expected count < 5 are pooled together (and the pool,
// if still < 5, with the smallest remaining bin). A count in a bin of probability exactly
// 0 is an impossible event: p_value = 0.
GofResult stats_chi2_gof(const std::vector<int64_t>& observed,
                         const std::vector<double>& expected_prob);
GofResult stats_g_test(const std::vector<int64_t>& observed,
                       const std::vector<double>& expected_prob);

double stats_mean(const std::vector<double>& v);
double stats_variance(const std::vector<double>& v);  // unbiased (n - 1), Welford
// The q-quantile (q in [0, 1]) of v, linear between order statistics (the sample at position
// q (n - 1) of the sorted values); 0 for an empty v.
double stats_quantile(std::vector<double> v, double q);

// Wilson score interval for successes / n at two-sided level 1 - alpha.
Interval stats_wilson_interval(int64_t successes, int64_t n, double alpha);
// Normal-approximation interval for the mean of v: mean +- z_{1-alpha/2} sd / sqrt(n).
Interval stats_mean_interval(const std::vector<double>& v, double alpha);

// Percentile bootstrap: n_resamples resamples of v with replacement (drawn with the counter
// RNG from seed), the statistic of each, and the alpha/2, 1 - alpha/2 quantiles.
// Percentile bootstrap over clusters: n_resamples draws of n_clusters cluster indices with
// replacement (keys (seed, resample, i, kRngBootstrap)); stat(picks) computes the statistic
// of one resample (a ratio of sums over the picked clusters, say), and resamples where it is
// not finite are dropped. Clusters keep together what is not independent: a prompt's repeats,
// a text's positions. {NaN, NaN} when no resample had a statistic.
Interval stats_cluster_bootstrap_interval(
    size_t n_clusters, const std::function<double(const std::vector<size_t>&)>& stat,
    int n_resamples, double alpha, uint64_t seed);

// The same with each value its own cluster.
Interval stats_bootstrap_interval(const std::vector<double>& v,
                                  const std::function<double(const std::vector<double>&)>& stat,
                                  int n_resamples, double alpha, uint64_t seed);

}  // namespace speclab
