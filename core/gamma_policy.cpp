#include "core/gamma_policy.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace speclab {

std::unique_ptr<GammaPolicy> gamma_policy_create(const std::string& name, int gamma_max) {
  if (name == "fixed") return std::make_unique<GammaFixed>(gamma_max);
  if (name == "heuristic") return std::make_unique<GammaHfHeuristic>(gamma_max);
  if (name == "entropy") return std::make_unique<GammaEntropyGuided>(1, gamma_max, 0.5);
  fail_input("gamma policy: '", name, "' (expected fixed, heuristic or entropy)");
}

GammaFixed::GammaFixed(int gamma) : gamma_(gamma) {
  SPECLAB_INPUT_CHECK(gamma >= 1, "gamma policy fixed: gamma must be >= 1, got ", gamma);
}

GammaHfHeuristic::GammaHfHeuristic(int initial_gamma) : gamma_(initial_gamma) {
  SPECLAB_INPUT_CHECK(initial_gamma >= 1,
                      "gamma policy heuristic: initial gamma must be >= 1, got ", initial_gamma);
}

void GammaHfHeuristic::observe(int n_draft, int n_accepted, const std::vector<float>&) {
  // transformers: `if num_matches == num_assistant_tokens: += 2.0 else: max(1.0, -= 1.0)`
  gamma_ = n_accepted == n_draft ? gamma_ + 2 : std::max(1, gamma_ - 1);
}

GammaEntropyGuided::GammaEntropyGuided(int gamma_min, int gamma_max, double ema_beta)
    : gamma_min_(gamma_min), gamma_max_(gamma_max), beta_(ema_beta) {
  SPECLAB_INPUT_CHECK(gamma_min >= 1 && gamma_max >= gamma_min,
                      "gamma policy entropy: need 1 <= gamma_min <= gamma_max, got ", gamma_min,
                      ", ", gamma_max);
  SPECLAB_INPUT_CHECK(ema_beta >= 0.0 && ema_beta < 1.0,
                      "gamma policy entropy: ema beta must lie in [0, 1), got ", ema_beta);
}

int GammaEntropyGuided::next_gamma() {
  if (!seen_) return gamma_max_;
  const double g = gamma_max_ - (gamma_max_ - gamma_min_) * h_;
  return std::clamp(static_cast<int>(std::lround(g)), gamma_min_, gamma_max_);
}

void GammaEntropyGuided::observe(int, int, const std::vector<float>& entropies) {
  if (entropies.empty()) return;  // nothing drafted: no evidence
  double mean = 0.0;
  for (float h : entropies) mean += std::clamp(h, 0.0f, 1.0f);
  mean /= static_cast<double>(entropies.size());
  h_ = seen_ ? beta_ * h_ + (1.0 - beta_) * mean : mean;
  seen_ = true;
}

}  // namespace speclab
