// Acceptance statistics summarized from round records (one request or many).
//
// Position i (0-based) of a round is "tested" when it was drafted and every earlier draft of
// the round was accepted; only tested positions have prefixes distributed as the target's,
// so only they enter the Corollary 3.6 estimate alpha = E[sum_x min(p, q)].
#pragma once

#include <cstdint>
#include <vector>

#include "models/decode/generation.h"

namespace speclab {

struct AcceptanceStats {
  int64_t n_rounds = 0;
  int64_t n_drafted = 0;  // all proposed tokens (tree rounds: their depth, see n_tree_nodes)
  int64_t n_tested = 0;   // proposed tokens that reached the accept test
  int64_t n_accepted = 0;
  int64_t n_emitted = 0;             // committed tokens (accepted + corrections/bonus, after stops)
  double beta_sum = 0;               // sum of beta over tested positions that carry one
  int64_t n_beta = 0;                // tested positions with a beta (tree rounds have none)
  int64_t n_tree_nodes = 0;          // tree rounds: drafted nodes verified
  std::vector<int64_t> drafted_at;   // [max gamma] rounds that drafted position i
  std::vector<int64_t> tested_at;    // [max gamma] rounds where position i was tested
  std::vector<int64_t> accepted_at;  // [max gamma] rounds that accepted position i

  void add(const RoundRecord& r);
  void add(const std::vector<RoundRecord>& rounds) {
    for (const auto& r : rounds) add(r);
  }
  // Empirical acceptance: accepted / tested (estimates E[min(1, p/q)] = alpha).
  double alpha_empirical() const { return n_tested ? double(n_accepted) / n_tested : 0.0; }
  // Corollary 3.6: mean over tested positions of sum_x min(p, q).
  double alpha_beta() const { return n_beta ? beta_sum / n_beta : 0.0; }
  // Conditional acceptance at position i: accepted_at / tested_at.
  std::vector<double> conditional_acceptance() const;
  // Survival at position i: accepted_at / drafted_at (P[first i+1 drafts all accepted]).
  std::vector<double> survival() const;
  // Tokens per round (= tokens per target call after the prefill): the paper's E[#tokens].
  double tau() const { return n_rounds ? double(n_emitted) / n_rounds : 0.0; }
};

}  // namespace speclab
