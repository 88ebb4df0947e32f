#include "core/speedup_theory.h"

#include <cmath>

#include "core/error.h"

namespace speclab {

namespace {

void check_alpha(double alpha) {
  SPECLAB_INPUT_CHECK(alpha >= 0.0 && alpha <= 1.0, "alpha must lie in [0, 1], got ", alpha);
}
void check_gamma(int gamma) { SPECLAB_INPUT_CHECK(gamma >= 0, "gamma must be >= 0, got ", gamma); }
void check_cost(double c, const char* name) {
  SPECLAB_INPUT_CHECK(c >= 0.0 && std::isfinite(c), name, " must be a finite number >= 0, got ", c);
}

}  // namespace

// Eq. (1): (1 - a^(g+1)) / (1 - a) = sum_{i=0..g} a^i.
double theory_expected_tokens(double alpha, int gamma) {
  check_alpha(alpha);
  check_gamma(gamma);
  double sum = 0.0, term = 1.0;
  for (int i = 0; i <= gamma; ++i) {
    sum += term;
    term *= alpha;
  }
  return sum;
}

// Theorem 3.8.
double theory_walltime_speedup(double alpha, double c, int gamma) {
  check_cost(c, "c");
  return theory_expected_tokens(alpha, gamma) / (gamma * c + 1.0);
}

// Theorem 3.11: one round costs T_hat (c_hat gamma + gamma + 1) operations for Eq. (1) tokens.
double theory_operations_factor(double alpha, double c_hat, int gamma) {
  check_cost(c_hat, "c_hat");
  return (gamma * c_hat + gamma + 1.0) / theory_expected_tokens(alpha, gamma);
}

// Corollary 3.9.
bool theory_gamma_improves(double alpha, double c) {
  check_alpha(alpha);
  check_cost(c, "c");
  return alpha > c;
}

double theory_gamma1_speedup_bound(double alpha, double c) {
  check_alpha(alpha);
  check_cost(c, "c");
  return (1.0 + alpha) / (1.0 + c);
}

// Section 3.5 / Figure 3.
OptimalGamma theory_optimal_gamma(double alpha, double c, int gamma_max) {
  check_alpha(alpha);
  check_cost(c, "c");
  SPECLAB_INPUT_CHECK(gamma_max >= 1, "gamma-max must be >= 1, got ", gamma_max);
  OptimalGamma best;
  best.gamma = 1;
  best.speedup = theory_walltime_speedup(alpha, c, 1);
  for (int g = 2; g <= gamma_max; ++g) {
    const double s = theory_walltime_speedup(alpha, c, g);
    if (s > best.speedup) {
      best.gamma = g;
      best.speedup = s;
    }
    // Upper bound for every g' >= g: E[tokens] < 1 / (1 - alpha), cost >= g c + 1.
    if (alpha < 1.0 && c > 0.0 && 1.0 / ((1.0 - alpha) * (g * c + 1.0)) <= best.speedup) break;
  }
  // Capped: the maximum might lie beyond gamma_max (the next gamma is still better).
  best.capped =
      best.gamma == gamma_max && theory_walltime_speedup(alpha, c, gamma_max + 1) > best.speedup;
  return best;
}

// Section 3.5 oracle.
double theory_oracle_expected_tokens(double alpha) {
  check_alpha(alpha);
  SPECLAB_INPUT_CHECK(alpha < 1.0, "oracle bound: alpha must be < 1, got ", alpha);
  return 1.0 / (1.0 - alpha);
}

double theory_oracle_speedup(double alpha, double c) {
  check_alpha(alpha);
  check_cost(c, "c");
  SPECLAB_INPUT_CHECK(alpha < 1.0 || c > 0.0, "oracle bound: unbounded for alpha = 1, c = 0");
  return 1.0 / (1.0 - alpha + c * alpha);
}

// ---------------------------------------------------------------------------------------------

void theory_refined_validate(const RefinedCostModel& m) {
  SPECLAB_INPUT_CHECK(!m.accept_cond.empty(), "refined model: accept_cond is empty");
  for (size_t i = 0; i < m.accept_cond.size(); ++i)
    SPECLAB_INPUT_CHECK(m.accept_cond[i] >= 0.0 && m.accept_cond[i] <= 1.0,
                        "refined model: accept_cond[", i, "] must lie in [0, 1], got ",
                        m.accept_cond[i]);
  check_cost(m.draft_seconds_per_token, "refined model: draft_seconds_per_token");
  check_cost(m.draft_catchup_seconds, "refined model: draft_catchup_seconds");
  check_cost(m.round_overhead_seconds, "refined model: round_overhead_seconds");
  SPECLAB_INPUT_CHECK(m.target_seconds.size() >= m.accept_cond.size() + 1,
                      "refined model: target_seconds needs T(1)..T(G+1) = ",
                      m.accept_cond.size() + 1, " entries, got ", m.target_seconds.size());
  for (size_t k = 0; k < m.target_seconds.size(); ++k)
    SPECLAB_INPUT_CHECK(m.target_seconds[k] > 0.0 && std::isfinite(m.target_seconds[k]),
                        "refined model: target_seconds[", k, "] = T(", k + 1, ") must be > 0, got ",
                        m.target_seconds[k]);
}

double theory_refined_all_accepted(const std::vector<double>& accept_cond, int gamma) {
  check_gamma(gamma);
  SPECLAB_INPUT_CHECK(static_cast<size_t>(gamma) <= accept_cond.size(), "refined model: gamma ",
                      gamma, " exceeds the ", accept_cond.size(), " measured positions");
  double prod = 1.0;
  for (int i = 0; i < gamma; ++i) prod *= accept_cond[i];
  return prod;
}

// E[tokens](g) = 1 + sum_{i=1..g} prod_{j<=i} a_j.
double theory_refined_expected_tokens(const std::vector<double>& accept_cond, int gamma) {
  check_gamma(gamma);
  SPECLAB_INPUT_CHECK(static_cast<size_t>(gamma) <= accept_cond.size(), "refined model: gamma ",
                      gamma, " exceeds the ", accept_cond.size(), " measured positions");
  double sum = 1.0, prod = 1.0;
  for (int i = 0; i < gamma; ++i) {
    prod *= accept_cond[i];
    sum += prod;
  }
  return sum;
}

double theory_refined_round_seconds(const RefinedCostModel& m, int gamma) {
  theory_refined_validate(m);
  SPECLAB_INPUT_CHECK(gamma >= 1 && static_cast<size_t>(gamma) <= m.accept_cond.size(),
                      "refined model: gamma must lie in [1, ", m.accept_cond.size(), "], got ",
                      gamma);
  return gamma * m.draft_seconds_per_token + m.target_seconds[gamma] +
         theory_refined_all_accepted(m.accept_cond, gamma) * m.draft_catchup_seconds +
         m.round_overhead_seconds;
}

double theory_refined_speedup(const RefinedCostModel& m, int gamma) {
  const double round = theory_refined_round_seconds(m, gamma);
  return theory_refined_expected_tokens(m.accept_cond, gamma) * m.target_seconds[0] / round;
}

OptimalGamma theory_refined_optimal_gamma(const RefinedCostModel& m) {
  theory_refined_validate(m);
  OptimalGamma best;
  best.speedup = theory_refined_speedup(m, 1);
  const int G = static_cast<int>(m.accept_cond.size());
  for (int g = 2; g <= G; ++g) {
    const double s = theory_refined_speedup(m, g);
    if (s > best.speedup) {
      best.gamma = g;
      best.speedup = s;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------

MemoryTraffic theory_memory_traffic(const MemoryModel& m, double expected_tokens, int gamma) {
  check_cost(m.target_weight_bytes, "target_weight_bytes");
  check_cost(m.target_kv_bytes, "target_kv_bytes");
  check_cost(m.draft_weight_bytes, "draft_weight_bytes");
  check_cost(m.draft_kv_bytes, "draft_kv_bytes");
  check_gamma(gamma);
  SPECLAB_INPUT_CHECK(expected_tokens >= 1.0 && expected_tokens <= gamma + 1.0,
                      "memory traffic: expected tokens per round must lie in [1, gamma + 1], got ",
                      expected_tokens);
  MemoryTraffic t;
  const double target = m.target_weight_bytes + m.target_kv_bytes;
  const double draft = m.draft_weight_bytes + m.draft_kv_bytes;
  t.baseline_bytes_per_token = target;
  t.speculative_bytes_per_token = (gamma * draft + target) / expected_tokens;
  t.ratio = target > 0.0 ? t.speculative_bytes_per_token / target : 0.0;
  return t;
}

}  // namespace speclab
