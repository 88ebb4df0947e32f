#include "core/law_check.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/stats.h"

namespace speclab {

double law_pit(const float* p, int64_t vocab, int32_t x, double v) {
  SPECLAB_ASSERT(x >= 0 && x < vocab);
  const float px = p[x];
  double before = 0.0;  // mass of the tokens ranked before x: more probable, or as probable
                        // with a lower id
  for (int64_t y = 0; y < vocab; y++)
    if (p[y] > px || (p[y] == px && y < x)) before += p[y];
  const double u = before + v * static_cast<double>(px);
  return std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
}

int law_pit_bin(double u, int bins) { return std::clamp(static_cast<int>(u * bins), 0, bins - 1); }

LawCheckTally::LawCheckTally(int b) : bins(b), counts(b, 0), draft_counts(b, 0) {
  SPECLAB_ASSERT(b >= 2);
}

void LawCheckTally::add_emitted(int position, double u) {
  SPECLAB_ASSERT(position >= 0);
  const int bin = law_pit_bin(u, bins);
  counts[bin]++;
  if (static_cast<size_t>(position) >= by_position.size())
    by_position.resize(position + 1, std::vector<int64_t>(bins, 0));
  by_position[position][bin]++;
}

void LawCheckTally::add_drafted(double u) { draft_counts[law_pit_bin(u, bins)]++; }

int64_t LawCheckTally::n_tokens() const {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

namespace {

int64_t sum(const std::vector<int64_t>& v) {
  int64_t n = 0;
  for (int64_t c : v) n += c;
  return n;
}

// Pearson's X^2 of counts against equal bins.
double pearson_uniform(const std::vector<int64_t>& counts) {
  const double expected = static_cast<double>(sum(counts)) / static_cast<double>(counts.size());
  double x2 = 0.0;
  for (int64_t c : counts) x2 += (c - expected) * (c - expected) / expected;
  return x2;
}

}  // namespace

double law_noncentrality_for_power(double df, double alpha, double power) {
  SPECLAB_ASSERT(df > 0 && alpha > 0 && alpha < 1 && power > alpha && power < 1);
  double lo = 0.0, hi = 1.0;
  while (stats_chi2_power(df, hi, alpha) < power) hi *= 2;
  while (hi - lo > 1e-9 * hi) {
    const double mid = 0.5 * (lo + hi);
    (stats_chi2_power(df, mid, alpha) < power ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double law_accept_all_noncentrality(int64_t n, const std::vector<int64_t>& draft_counts,
                                    double share) {
  const int64_t m = sum(draft_counts);
  if (m < 2) return 0.0;
  const double b = static_cast<double>(draft_counts.size());
  double sq = 0.0;  // sum_j pi^_j^2
  for (int64_t c : draft_counts) sq += (static_cast<double>(c) / m) * (static_cast<double>(c) / m);
  // E[pi^_j^2] = pi_j^2 + pi_j (1 - pi_j) / m, so (m sq - 1) / (m - 1) is unbiased for
  // sum_j pi_j^2, and sum_j (pi_j - 1/B)^2 = sum_j pi_j^2 - 1/B.
  const double d = std::max(0.0, (static_cast<double>(m) * sq - 1.0) / (m - 1.0) - 1.0 / b);
  return static_cast<double>(n) * b * share * share * d;
}

LawCheckResult law_check_evaluate(const LawCheckTally& t, double level) {
  LawCheckResult r;
  r.n_tokens = t.n_tokens();
  r.impossible = t.impossible;
  const int64_t min_tokens = static_cast<int64_t>(kLawCheckMinPerBin) * t.bins;
  const double df = t.bins - 1.0;
  double min_p = 1.0;
  if (r.n_tokens >= min_tokens) {
    r.tested = true;
    r.statistic = pearson_uniform(t.counts);
    min_p = stats_chi2_sf(r.statistic, df);
    r.n_tests++;
  }
  for (const std::vector<int64_t>& c : t.by_position) {
    const int64_t n = sum(c);
    r.tokens_by_position.push_back(n);
    if (n < min_tokens) {
      r.p_value_by_position.push_back(-1.0);
      continue;
    }
    const double p = stats_chi2_sf(pearson_uniform(c), df);
    r.p_value_by_position.push_back(p);
    min_p = std::min(min_p, p);
    r.n_tests++;
  }
  r.p_value = r.n_tests ? std::min(1.0, r.n_tests * min_p) : 1.0;
  if (r.impossible > 0) r.p_value = 0.0;
  if (r.tested) {
    const double alpha = level / r.n_tests;  // each test's share of the family's level
    r.noncentrality_80 = law_noncentrality_for_power(df, alpha, kLawCheckPower);
    r.min_detectable_tv = std::sqrt(r.noncentrality_80 / (4.0 * r.n_tokens));
    const int64_t drafted = sum(t.draft_counts);
    if (drafted >= 2 && t.rounds > 0) {
      const double k = static_cast<double>(drafted) / t.rounds;
      const double lambda = law_accept_all_noncentrality(r.n_tokens, t.draft_counts, k / (k + 1));
      r.power_accept_all = stats_chi2_power(df, lambda, alpha);
    }
  }
  return r;
}

}  // namespace speclab
