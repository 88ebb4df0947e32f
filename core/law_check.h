// The in-run law check: are the tokens a speculative run emitted distributed as the target's
// standardized p? With lenience 1, Leviathan et al. 2023 (Theorem 3.5, Appendix A.1) give
// x_t ~ p(. | x_<t) for every emitted token x_t, the same law as plain sampling.
//
// Randomized probability integral transform (the PIT of a discrete forecast; Brockwell 2007,
// "Universal residuals"; Czado, Gneiting & Held 2009): with the vocabulary ordered by p, most
// probable first (ties: lower id first), and v_t ~ Uniform(0, 1) drawn apart (stream
// kRngLawCheck, read by no decoding decision),
//   u_t = sum_{y before x_t} p_t(y) + v_t p_t(x_t)
// is Uniform(0, 1) given the prefix, exactly, when x_t ~ p_t; so u_1, u_2, ... are i.i.d.
// uniform (each is uniform given everything before it, stops included). Ordering by p lets the
// check see the departures that matter in every context alike: a law sharper than p (peaked
// drafts accepted too often) puts u near 0, a flatter one near 1; ordered by token id they would
// land at a different place in each context and cancel. u costs one pass over the row, no sort.
//
// The test: Pearson's chi-square on kLawCheckBins equal bins of u over all tested tokens, and
// one per position within the round (1..gamma+1: a token's position in its round is fixed before
// it is drawn, so u is uniform given it too); a test runs only with at least 5 tokens per bin.
// The family's p-value is Bonferroni's, min(1, m * min p) over the m tests that ran, and the
// check fails below kLawCheckLevel = 1e-4: a sweep of hundreds of exact cells rarely raises a
// false alarm (each at most 1e-4). A token of probability 0 under p (outside top-k / top-p; at
// temperature 0 any token but the argmax, p being one-hot) is impossible: p-value 0.
//
// Power, stated as numbers: lambda_80, the noncentrality the overall test (level 1e-4 / m)
// detects with probability 0.8; the smallest total-variation distance between the binned law of
// u and uniform that it detects with that probability whatever its shape, sqrt(lambda_80 / 4n)
// (the bound of stats_chi2_power); and its power against one named wrong law read off the run's
// own rounds: a verifier that accepts every draft without the test. That verifier would emit
// each round's drafts d_1..d_k, then a bonus token from p (uniform u); the u of d_i under p_i is
// computed for every drafted position, so its binned law pi_d is estimated from the run itself.
// Per token the alternative is the mixture (k pi_d + uniform) / (k + 1), k the mean drafted per
// round, and the test's noncentrality at the run's n tokens is
//   lambda = n * B * (k / (k + 1))^2 * D,   D = sum_j (pi_d,j - 1/B)^2,
// with D estimated without bias from the m drafted u: (m sum pi^_j^2 - 1) / (m - 1) - 1/B.
#pragma once

#include <cstdint>
#include <vector>

namespace speclab {

constexpr int kLawCheckBins = 10;
constexpr double kLawCheckLevel = 1e-4;  // the family's level: law_mismatch below it
constexpr double kLawCheckPower = 0.8;   // the power lambda_80 and the detectable TV refer to
constexpr int kLawCheckMinPerBin = 5;    // tokens per bin for a chi-square test to run

// u of token x under p[vocab] (standardized, summing to 1 up to rounding), v in [0, 1):
// sum of p(y) over the y ranked before x (p(y) > p(x), or equal with y < x) plus v p(x),
// clamped to [0, 1). One pass over p.
double law_pit(const float* p, int64_t vocab, int32_t x, double v);

// The equal bin of u in [0, 1): floor(u * bins), at most bins - 1.
int law_pit_bin(double u, int bins);

// Counts the check accumulates over a cell's generations.
struct LawCheckTally {
  explicit LawCheckTally(int bins = kLawCheckBins);
  int bins;
  std::vector<int64_t> counts;                    // [bins] u of every tested emitted token
  std::vector<std::vector<int64_t>> by_position;  // [position in round][bins]
  std::vector<int64_t> draft_counts;              // [bins] u of every drafted token under p
  int64_t impossible = 0;                         // emitted tokens of probability 0 under p
  int64_t rounds = 0;                             // rounds whose drafts were tallied

  void add_emitted(int position, double u);  // position: 0-based within its round
  void add_drafted(double u);  // a drafted token's u (every drafted position of a round)
  int64_t n_tokens() const;
};

struct LawCheckResult {
  int64_t n_tokens = 0;
  int64_t impossible = 0;
  bool tested = false;   // the overall chi-square ran (n_tokens >= kLawCheckMinPerBin * bins)
  double statistic = 0;  // the overall Pearson X^2, bins - 1 degrees of freedom
  double p_value = 1;    // the family's (Bonferroni); 0 with an impossible token
  int n_tests = 0;       // chi-square tests that ran: overall and positions
  std::vector<int64_t> tokens_by_position;  // [positions]
  std::vector<double> p_value_by_position;  // [positions] unadjusted; -1: too few tokens
  double noncentrality_80 = 0;              // lambda_80 of the overall test at level / n_tests
  double min_detectable_tv = 0;             // sqrt(lambda_80 / (4 n))
  double power_accept_all = -1;             // -1: no drafted token to estimate the law from
  bool failed(double level = kLawCheckLevel) const { return p_value < level; }
};

LawCheckResult law_check_evaluate(const LawCheckTally& tally, double level = kLawCheckLevel);

// The noncentrality lambda at which a chi-square test with df degrees of freedom at level alpha
// has the given power (bisection on stats_chi2_power, to 1e-9 relative).
double law_noncentrality_for_power(double df, double alpha, double power);

// The noncentrality of the test at n tokens against the accept-every-draft verifier whose
// drafted u fell into draft_counts[bins], with share = k / (k + 1) of the tokens drafts (see the
// header comment); 0 when fewer than 2 drafted u.
double law_accept_all_noncentrality(int64_t n, const std::vector<int64_t>& draft_counts,
                                    double share);

}  // namespace speclab
