#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace speclab {
namespace {

// P(a, x) by its power series; converges fast for x < a + 1 (Numerical Recipes 6.2).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 100000; n++) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by Lentz's continued fraction; converges fast for x >= a + 1.
double gamma_q_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

struct Bins {
  std::vector<double> obs, expct;  // pooled observed and expected counts
  bool impossible = false;         // a count in a bin of probability 0
};

Bins pool_bins(const std::vector<int64_t>& observed, const std::vector<double>& prob) {
  SPECLAB_INPUT_CHECK(observed.size() == prob.size() && !observed.empty(),
                      "goodness of fit: ", observed.size(), " observed bins vs ", prob.size(),
                      " expected");
  double n = 0.0, psum = 0.0;
  for (size_t k = 0; k < prob.size(); k++) {
    SPECLAB_INPUT_CHECK(prob[k] >= 0.0 && observed[k] >= 0,
                        "goodness of fit: negative count or probability at bin ", k);
    n += observed[k];
    psum += prob[k];
  }
  SPECLAB_INPUT_CHECK(psum > 0.0 && n > 0.0, "goodness of fit: no mass or no observations");
  Bins b;
  double pool_o = 0.0, pool_e = 0.0;
  for (size_t k = 0; k < prob.size(); k++) {
    const double e = n * prob[k] / psum;
    if (prob[k] == 0.0) {
      if (observed[k] > 0) b.impossible = true;
      continue;  // an impossible bin with no count carries no information
    }
    if (e < 5.0) {
      pool_o += observed[k];
      pool_e += e;
    } else {
      b.obs.push_back(static_cast<double>(observed[k]));
      b.expct.push_back(e);
    }
  }
  if (pool_e > 0.0) {
    if (pool_e < 5.0 && !b.expct.empty()) {  // merge the pool into the smallest bin
      const size_t k = std::min_element(b.expct.begin(), b.expct.end()) - b.expct.begin();
      b.obs[k] += pool_o;
      b.expct[k] += pool_e;
    } else {
      b.obs.push_back(pool_o);
      b.expct.push_back(pool_e);
    }
  }
  return b;
}

GofResult finish(const Bins& b, double statistic) {
  GofResult r;
  r.n_bins = static_cast<int>(b.obs.size());
  r.df = std::max(0, r.n_bins - 1);
  if (b.impossible) {
    r.statistic = std::numeric_limits<double>::infinity();
    r.p_value = 0.0;
    return r;
  }
  r.statistic = statistic;
  r.p_value = r.df > 0 ? stats_chi2_sf(statistic, r.df) : 1.0;
  return r;
}

}  // namespace

double stats_gamma_p(double a, double x) {
  SPECLAB_ASSERT(a > 0.0 && x >= 0.0);
  if (x == 0.0) return 0.0;
  return x < a + 1.0 ? gamma_p_series(a, x) : 1.0 - gamma_q_fraction(a, x);
}

double stats_gamma_q(double a, double x) {
  SPECLAB_ASSERT(a > 0.0 && x >= 0.0);
  if (x == 0.0) return 1.0;
  return x < a + 1.0 ? 1.0 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

double stats_chi2_sf(double x, double df) {
  if (x <= 0.0) return 1.0;
  if (std::isinf(x)) return 0.0;
  return stats_gamma_q(0.5 * df, 0.5 * x);
}

double stats_chi2_quantile(double prob, double df) {
  SPECLAB_ASSERT(prob > 0.0 && prob < 1.0 && df > 0.0);
  const double target_sf = 1.0 - prob;
  double lo = 0.0, hi = std::max(1.0, df);
  while (stats_chi2_sf(hi, df) > target_sf) hi *= 2.0;
  for (int it = 0; it < 200 && hi - lo > 1e-10 * hi; it++) {
    const double mid = 0.5 * (lo + hi);
    (stats_chi2_sf(mid, df) > target_sf ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double stats_chi2_power(double df, double lambda, double alpha) {
  const double crit = stats_chi2_quantile(1.0 - alpha, df);
  // X' = chi2_{df + 2J} with J ~ Poisson(lambda / 2). Sum from the mode both ways.
  const double mu = 0.5 * lambda;
  const int64_t mode = static_cast<int64_t>(mu);
  auto pois = [&](int64_t j) {
    return std::exp(-mu + j * std::log(std::max(mu, 1e-300)) - std::lgamma(j + 1.0));
  };
  double power = 0.0;
  for (int64_t j = mode; j >= 0; j--) {
    const double w = mu == 0.0 ? (j == 0 ? 1.0 : 0.0) : pois(j);
    power += w * stats_chi2_sf(crit, df + 2.0 * j);
    if (w < 1e-17 && j < mode) break;
  }
  for (int64_t j = mode + 1; mu > 0.0; j++) {
    const double w = pois(j);
    power += w * stats_chi2_sf(crit, df + 2.0 * j);
    if (w < 1e-17) break;
  }
  return std::min(1.0, power);
}

double stats_normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double stats_normal_quantile(double prob) {
  SPECLAB_ASSERT(prob > 0.0 && prob < 1.0);
  // Bisection on the survival function: slow-ish (~100 erfc calls) but exact to 1e-15,
  // and only ever used a handful of times per measurement.
  double lo = -40.0, hi = 40.0;
  for (int it = 0; it < 200; it++) {
    const double mid = 0.5 * (lo + hi);
    (1.0 - stats_normal_sf(mid) < prob ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

GofResult stats_chi2_gof(const std::vector<int64_t>& observed,
                         const std::vector<double>& expected_prob) {
  const Bins b = pool_bins(observed, expected_prob);
  double x2 = 0.0;
  for (size_t k = 0; k < b.obs.size(); k++) {
    const double diff = b.obs[k] - b.expct[k];
    x2 += diff * diff / b.expct[k];
  }
  return finish(b, x2);
}

GofResult stats_g_test(const std::vector<int64_t>& observed,
                       const std::vector<double>& expected_prob) {
  const Bins b = pool_bins(observed, expected_prob);
  double g = 0.0;
  for (size_t k = 0; k < b.obs.size(); k++) {
    if (b.obs[k] > 0.0) g += 2.0 * b.obs[k] * std::log(b.obs[k] / b.expct[k]);
  }
  return finish(b, g);
}

double stats_mean(const std::vector<double>& v) {
  SPECLAB_ASSERT(!v.empty());
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stats_variance(const std::vector<double>& v) {
  SPECLAB_ASSERT(v.size() >= 2);
  double mean = 0.0, m2 = 0.0;
  int64_t n = 0;
  for (double x : v) {
    n++;
    const double delta = x - mean;
    mean += delta / n;
    m2 += delta * (x - mean);
  }
  return m2 / (n - 1);
}

double stats_quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Interval stats_wilson_interval(int64_t successes, int64_t n, double alpha) {
  SPECLAB_ASSERT(n > 0 && successes >= 0 && successes <= n);
  const double z = stats_normal_quantile(1.0 - 0.5 * alpha);
  const double ph = static_cast<double>(successes) / n, z2 = z * z;
  const double center = (ph + z2 / (2.0 * n)) / (1.0 + z2 / n);
  const double half = z * std::sqrt(ph * (1.0 - ph) / n + z2 / (4.0 * n * n)) / (1.0 + z2 / n);
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

Interval stats_mean_interval(const std::vector<double>& v, double alpha) {
  const double z = stats_normal_quantile(1.0 - 0.5 * alpha);
  const double m = stats_mean(v);
  const double half = z * std::sqrt(stats_variance(v) / static_cast<double>(v.size()));
  return {m - half, m + half};
}

Interval stats_cluster_bootstrap_interval(
    size_t n_clusters, const std::function<double(const std::vector<size_t>&)>& stat,
    int n_resamples, double alpha, uint64_t seed) {
  SPECLAB_ASSERT(n_clusters > 0 && n_resamples > 1);
  std::vector<double> stats;
  std::vector<size_t> picks(n_clusters);
  for (int b = 0; b < n_resamples; b++) {
    for (size_t i = 0; i < n_clusters; i++) {
      const RngKey key{seed, static_cast<uint64_t>(b), i, kRngBootstrap, 0};
      picks[i] = std::min(n_clusters - 1, static_cast<size_t>(rng_uniform(key) * n_clusters));
    }
    const double x = stat(picks);
    if (std::isfinite(x)) stats.push_back(x);  // a degenerate resample (0/0) has no statistic
  }
  if (stats.empty()) return {NAN, NAN};
  std::sort(stats.begin(), stats.end());
  const size_t n = stats.size();
  auto quantile = [&](double q) {  // linear interpolation between order statistics
    const double h = q * static_cast<double>(n - 1);
    const size_t k = static_cast<size_t>(h);
    const size_t k1 = std::min<size_t>(k + 1, n - 1);
    return stats[k] + (h - static_cast<double>(k)) * (stats[k1] - stats[k]);
  };
  return {quantile(0.5 * alpha), quantile(1.0 - 0.5 * alpha)};
}

Interval stats_bootstrap_interval(const std::vector<double>& v,
                                  const std::function<double(const std::vector<double>&)>& stat,
                                  int n_resamples, double alpha, uint64_t seed) {
  SPECLAB_ASSERT(!v.empty() && n_resamples > 1);
  std::vector<double> resample(v.size());
  return stats_cluster_bootstrap_interval(
      v.size(),
      [&](const std::vector<size_t>& picks) {
        for (size_t i = 0; i < picks.size(); i++) resample[i] = v[picks[i]];
        return stat(resample);
      },
      n_resamples, alpha, seed);
}

}  // namespace speclab
