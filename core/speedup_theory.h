// Closed-form predictions for speculative decoding (Leviathan, Kalman, Matias 2023, section 3).
//
// Notation (the paper's):
//   alpha  = E(beta), the expected per-token acceptance rate (Definition 3.1, Corollary 3.6);
//   gamma  = number of draft tokens per round (Algorithm 1);
//   c      = time of one draft (M_q) step / time of one target (M_p) step (Definition 3.7);
//   c_hat  = arithmetic operations per token of M_q / of M_p (Definition 3.10).
//
// Under the i.i.d. assumption the tokens produced by one round are a capped geometric variable
// (success probability 1 - alpha, cap gamma + 1):
//   Eq. (1)        E[tokens]   = (1 - alpha^(gamma+1)) / (1 - alpha)          (-> gamma+1 as alpha
//   -> 1) Theorem 3.8    speedup     = (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))
//   Theorem 3.11   operations  = (1 - alpha)(gamma c_hat + gamma + 1) / (1 - alpha^(gamma+1))
//   Corollary 3.9  alpha > c  =>  gamma = 1 improves, by a factor (1 + alpha) / (1 + c) at least
//                  (speedup(gamma = 1) = (1 - alpha^2) / ((1 - alpha)(1 + c)) = (1 + alpha)/(1 +
//                  c)).
//   Section 3.5    optimal gamma = argmax over integers of Theorem 3.8 (Figure 3); with an oracle
//                  for gamma E[tokens] = 1 / (1 - alpha) (see theory_oracle_speedup for the cost).
//
// Every (1 - alpha^(g+1)) / (1 - alpha) is evaluated as the sum 1 + alpha + ... + alpha^g, which is
// exact at alpha = 1 (g + 1) and has no cancellation near it.
#pragma once

#include <vector>

namespace speclab {

// Eq. (1). alpha in [0, 1], gamma >= 0 (gamma = 0 is plain decoding: 1 token).
double theory_expected_tokens(double alpha, int gamma);

// Theorem 3.8: expected walltime improvement factor over autoregressive decoding of M_p.
double theory_walltime_speedup(double alpha, double c, int gamma);

// Theorem 3.11: expected factor of increase of the total arithmetic operations.
double theory_operations_factor(double alpha, double c_hat, int gamma);

// Corollary 3.9: whether some gamma gives an improvement (alpha > c), and the improvement factor
// it then guarantees, (1 + alpha) / (1 + c) (Theorem 3.8 at gamma = 1). Note the paper's proof
// argues via gamma = 1, so (1 + alpha)/(1 + c) > 1 <=> alpha > c is an equivalence.
bool theory_gamma_improves(double alpha, double c);
double theory_gamma1_speedup_bound(double alpha, double c);

struct OptimalGamma {
  int gamma = 1;         // smallest integer gamma in [1, gamma_max] maximizing Theorem 3.8
  double speedup = 1.0;  // Theorem 3.8 at that gamma
  bool capped = false;   // true when the maximum may lie beyond gamma_max (speedup still rising)
};

// Section 3.5 / Figure 3: argmax over gamma in [1, gamma_max] of Theorem 3.8. For c > 0 the search
// stops early once no larger gamma can win: speedup(g) < 1 / ((1 - alpha)(g c + 1)), which falls
// below the best value found. For c = 0 the speedup increases with gamma, so the answer is
// gamma_max with capped = true.
OptimalGamma theory_optimal_gamma(double alpha, double c, int gamma_max);

// Section 3.5, oracle for gamma: each round drafts exactly the L tokens that will be accepted
// (L ~ Geometric: P(L = k) = alpha^k (1 - alpha)), and M_p still verifies them (footnote 4), so a
// round yields L + 1 tokens: E[tokens] = 1 / (1 - alpha). Its cost, in units of one M_p step, is
// c L + 1, so by the renewal-reward theorem the walltime improvement is
//   E[L + 1] / E[c L + 1] = (1 / (1 - alpha)) / (1 + c alpha / (1 - alpha)) = 1 / (1 - alpha + c
//   alpha).
// (The paper gives only E[tokens] and says the bound is up to ~60% above the best fixed gamma for
// typical alpha, c; the cost line is our derivation under the same Theorem 3.8 cost model.)
double theory_oracle_expected_tokens(double alpha);
double theory_oracle_speedup(double alpha, double c);

// ---------------------------------------------------------------------------------------------
// Refined model: fed with measured numbers by the measurement protocol.
//
// Acceptance: accept_cond[i - 1] = a_i = P(draft i accepted | drafts 1..i-1 accepted), i = 1..G
// (per-position conditional acceptance, no i.i.d. assumption):
//   E[tokens](g) = 1 + sum_{i=1..g} prod_{j<=i} a_j                           (g <= G)
// which is Eq. (1) when every a_i = alpha.
//
// Cost of one round with g drafts, in seconds (the measured protocol times exactly these pieces):
//   round(g) = g * draft_seconds_per_token          g draft forward calls of one token each
//                                                   (the first one also consumes the previous
//                                                   round's correction/bonus token)
//            + target_seconds[g]                    T(g+1): one M_p call on [last, d_1..d_g]
//            + P(all g accepted) * draft_catchup_seconds
//                                                   when all g drafts are accepted, d_g was never
//                                                   fed to the drafter; it must absorb d_g (and the
//                                                   bonus) before the next round. A drafter that
//                                                   folds this into its next first call (batch of
//                                                   2) reports that call's extra cost here; 0 if
//                                                   already included in draft_seconds_per_token.
//            + round_overhead_seconds               sampling, verification, KV truncation
// Baseline (autoregressive M_p): target_seconds[0] = T(1) per token.
//   predicted speedup(g) = E[tokens](g) * T(1) / round(g)
// With T(k) = T(1), draft_seconds_per_token = c T(1), catchup = overhead = 0 and a_i = alpha this
// is exactly Theorem 3.8.
struct RefinedCostModel {
  std::vector<double> accept_cond;     // a_1..a_G, each in [0, 1]
  double draft_seconds_per_token = 0;  // c_draft, seconds per draft step
  double draft_catchup_seconds = 0;    // see above
  double round_overhead_seconds = 0;   // see above
  std::vector<double> target_seconds;  // T(1)..T(G+1), seconds per M_p call of k tokens
};

// E[tokens](g) from per-position conditional acceptance; needs g <= accept_cond.size().
double theory_refined_expected_tokens(const std::vector<double>& accept_cond, int gamma);
// P(all g drafts accepted) = prod_{j<=g} a_j.
double theory_refined_all_accepted(const std::vector<double>& accept_cond, int gamma);
// Seconds per round, as above; needs g <= G and target_seconds.size() >= g + 1.
double theory_refined_round_seconds(const RefinedCostModel& m, int gamma);
// Predicted speedup(g) over autoregressive decoding; throws InputError on bad model fields.
double theory_refined_speedup(const RefinedCostModel& m, int gamma);
// argmax over g in [1, G] of theory_refined_speedup (smallest g on ties).
OptimalGamma theory_refined_optimal_gamma(const RefinedCostModel& m);
// Checks the fields (probabilities in [0, 1], positive T(k), sizes); InputError naming the field.
void theory_refined_validate(const RefinedCostModel& m);

// ---------------------------------------------------------------------------------------------
// Memory traffic (section 3.4, last paragraph): a round reads M_p's weights and KV cache once and
// M_q's gamma times, and yields E[tokens] tokens, so per generated token
//   baseline    = target_weight_bytes + target_kv_bytes
//   speculative = (gamma * (draft_weight_bytes + draft_kv_bytes)
//                  + target_weight_bytes + target_kv_bytes) / E[tokens]
// KV bytes are those one forward call reads at the context length of interest (the caller
// computes 2 * n_layers * n_ctx * n_kv_heads * head_dim * bytes_per_element).
struct MemoryModel {
  double target_weight_bytes = 0, target_kv_bytes = 0;
  double draft_weight_bytes = 0, draft_kv_bytes = 0;
};
struct MemoryTraffic {
  double baseline_bytes_per_token = 0;
  double speculative_bytes_per_token = 0;
  double ratio = 0;  // speculative / baseline; < 1 means speculation reads less memory per token
};
MemoryTraffic theory_memory_traffic(const MemoryModel& m, double expected_tokens, int gamma);

}  // namespace speclab
