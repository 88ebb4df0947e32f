// How many tokens to draft in the next speculative round.
//
// A policy is asked next_gamma() before drafting and told the outcome of the round with
// observe(n_draft, n_accepted, draft_entropies_normalized), where the entropies are
// H(q_i) / log(vocab) of each drafted position (core/sampling.h,
// sampling_entropy_normalized), in [0, 1].
//
//   GammaFixed        gamma every round (the paper's setting).
//   GammaHfHeuristic  Hugging Face transformers' assisted generation, schedule "heuristic"
//                     (AssistedCandidateGenerator.update_candidate_strategy): all drafts
//                     accepted -> gamma + 2, otherwise gamma - 1, never below 1.
//   GammaEntropyGuided  EGAG (seed 003 names it with gamma_min, gamma_max and an EMA beta but
//                     does not spell out the rule; this is ours): smooth the mean normalized
//                     draft entropy of the last round,
//                       h <- beta * h + (1 - beta) * mean_i H_i   (first round: h = mean_i H_i),
//                     and draft gamma = clamp(round(gamma_max - (gamma_max - gamma_min) * h)).
//                     Confident drafter (h -> 0) drafts gamma_max, clueless (h -> 1) gamma_min.
//                     Before any observation it drafts gamma_max.
//
// The draft-confidence stop (llama.cpp's p_min) is not a gamma policy: it lives in the
// drafters' DraftStopRule (models/drafters/drafter.h), its one home.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace speclab {

class GammaPolicy {
 public:
  virtual ~GammaPolicy() = default;
  virtual int next_gamma() = 0;
  virtual void observe(int n_draft, int n_accepted,
                       const std::vector<float>& draft_entropies_normalized) = 0;
};

// The one factory, by name, for the CLI, the sweeps and the simulator:
//   "fixed"      GammaFixed(gamma_max)
//   "heuristic"  GammaHfHeuristic(gamma_max) (gamma_max is its initial gamma)
//   "entropy"    GammaEntropyGuided(1, gamma_max, ema beta 0.5)
// Throws InputError naming the policy on anything else, or on gamma_max < 1.
std::unique_ptr<GammaPolicy> gamma_policy_create(const std::string& name, int gamma_max);

class GammaFixed : public GammaPolicy {
 public:
  explicit GammaFixed(int gamma);
  int next_gamma() override { return gamma_; }
  void observe(int, int, const std::vector<float>&) override {}

 private:
  int gamma_;
};

class GammaHfHeuristic : public GammaPolicy {
 public:
  explicit GammaHfHeuristic(int initial_gamma = 5);  // HF default: 5
  int next_gamma() override { return gamma_; }
  void observe(int n_draft, int n_accepted, const std::vector<float>&) override;

 private:
  int gamma_;
};

class GammaEntropyGuided : public GammaPolicy {
 public:
  GammaEntropyGuided(int gamma_min, int gamma_max, double ema_beta = 0.0);
  int next_gamma() override;
  void observe(int n_draft, int n_accepted,
               const std::vector<float>& draft_entropies_normalized) override;
  double smoothed_entropy() const { return h_; }

 private:
  int gamma_min_, gamma_max_;
  double beta_;
  double h_ = 0.0;
  bool seen_ = false;
};

}  // namespace speclab
