// Out-of-sample speedup prediction: what speculative decoding will buy, computed from two
// profiles measured apart from any speculative run (Leviathan et al. 2023, section 3, with
// the i.i.d. and constant-cost assumptions of Theorem 3.8 replaced by measured profiles).
//
//   Cost profile        the target's T(k) over k tokens, the drafter's seconds per round as a
//                       function of the tokens it proposes, its catch-up after a fully
//                       accepted round and its prefill of the prompt (per request), and the
//                       host seconds per round (standardize k rows + verify) - all measured
//                       in isolation (experiments/predict/cost_profile.h) or imported.
//   Acceptance profile  for every position t of the target's own generated text, a draft
//                       rollout from the true prefix and the probability that each of its
//                       tokens passes the verification test given the ones before it passed
//                       (experiments/predict/acceptance_profile.h). It does not depend on gamma.
//
// The predictor walks each profiled text the way the decoder does. A round that starts with
// t tokens emitted drafts g = min(gamma, max_new_tokens - t - 1, m_t) tokens (m_t: what the
// rollout at t proposed, cut by the p_min rule), accepts exactly n of them with probability
//   P(n) = S_t(n) - S_t(n + 1),   S_t(i) = prod_{j<=i} r_{t,j},  S_t(0) = 1, S_t(g + 1) = 0,
// (r_{t,j}: acceptance probability of the rollout's j-th token given j - 1 accepted) and
// continues at t + n + 1. For a fixed gamma the expected seconds V(t) and rounds R(t) to
// finish the text satisfy
//   V(t) = round_s(g) + sum_n P(n) [V(t + n + 1) + (n == g) catchup_s],   V(t >= N) = 0,
// computed exactly backwards over t. Adaptive gamma policies are walked by Monte Carlo
// (their state depends on the history). Then, with the baseline's seconds per token
//   base_s = T_plain(1) + host_s(1)   (one target call and one sampling per token; T_plain(1)
//                                       is T(1) timed in a run of steps at advancing
//                                       positions, as the plain loop runs it, where T(k) is
//                                       timed after a draft proposal),
//   predicted speedup = (sum_prompts N_p) base_s / sum_prompts (draft_prefill_s + V_p(0)),
// the same pooled ratio of per-token times the measurement reports.
//
// round_s(g) = draft_round_s[g] + T(g + 1) + host_s(g + 1) (a round verified on the target's
// device: draft_round_s[g] + verify_device_s(g + 1), standardize and verify inside it); with T(k) =
// T(1), draft_round_s[g] = g c T(1), host, catch-up and prefill 0, r = alpha everywhere and N ->
// infinity this is Theorem 3.8 exactly (tests/core/test_speedup_prediction.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/rng.h"

namespace speclab {

// Seconds, measured at one context length (or imported).
struct CostProfile {
  std::string source;                 // "measured", "reused" (from a file), "csv", "llama-bench"
  std::string origin;                 // the file it came from ("" when measured in this run)
  int64_t context_len = 0;            // cache length the calls started from
  std::vector<double> target_s;       // [K] T(k): one target call over k tokens, k = 1..K
  std::vector<double> draft_round_s;  // [G + 1] one draft proposal of n tokens, n = 0..G, in the
                                      // steady state (one token to catch up: the correction)
  double draft_step_s = 0;            // one draft forward step of one token (the paper's c
                                      // numerator; c = draft_step_s / T(1))
  double draft_catchup_s = 0;         // extra seconds of the next proposal after a round that
                                      // accepted every draft (two tokens to catch up)
  double draft_prefill_s = 0;         // per request: the drafter's first proposal (it reads the
                                      // prompt) minus a steady one-token proposal
  std::vector<double> host_round_s;   // [K] host seconds of a round verifying k tokens
                                      // (standardize k rows + verify), k = 1..K; [0] is the
                                      // baseline's sampling of one token
  double baseline_step_s = 0;         // the plain loop's step: T(1) timed in a run of steps at
                                      // advancing positions, as autoregressive decoding runs
                                      // it, their mean (T(k) above is
                                      // timed right after a draft proposal, as a verify runs);
                                      // 0: not profiled (older files, imported figures), T(1)
                                      // stands in
  // Tree shape ("3x2x1:topk", TreeShape::to_string) -> [depth + 1] seconds of the drafter's
  // proposal of that tree cut to depth g, g = 0..depth ([0] = 0; the tree decoder drops the
  // deepest levels near the budget). A shape not here is priced as a chain: draft_round_s[g].
  std::map<std::string, std::vector<double>> draft_tree_s;
  // [N + 1] seconds of a one-token proposal n tokens behind, after a target call, n = 1..N
  // ([0] = 0; [1] is the steady state of draft_round_s, [2] the catch-up's state). A tree
  // round forgets its tree (models/drafters/model_drafter.cpp), so the next proposal reads the
  // i accepted tokens and the correction: i + 1 behind, where a chain's is 1 (2 after a fully
  // accepted round). Measured for groups with tree cells (N = their deepest tree + 1); empty
  // otherwise, and a tree round is then charged the chain's catch-up.
  std::vector<double> draft_behind_s;
  // [K] seconds of one verification of k tokens where the target verifies on its device
  // (TokenRunner::verify_on_device: the forward pass, standardizing the k rows and verifying
  // the k - 1 drafts there, the record back to the host), k = 1..K, timed after a proposal
  // of k - 1 drafts whose q the draft runner left on the device. Empty: the target verifies
  // on the host (the CPU), and a round's verification is T(k) + host(k). A round verified on
  // the device (ChainSetting::verify_on_device) is priced by this figure alone: its
  // standardize and verify ran inside it, on the device.
  std::vector<double> verify_device_s;
  int max_gamma() const { return static_cast<int>(draft_round_s.size()) - 1; }
  // T(k) at a fractional k (a mean round), linear between profiled k, clamped to [1, K].
  double target_at(double k) const;
  // host_round_s the same way (the host's standardize and verify of a mean round).
  double host_at(double k) const;
  // What the target's side of a round verifying k tokens costs (a fractional k read linearly
  // as above): verify_device_s when `on_device` and profiled, else T(k) + host(k).
  double round_target_side_at(double k, bool on_device) const;
  // Seconds of one plain decoding step's forward (baseline_step_s, else T(1)).
  double plain_step_s() const { return baseline_step_s > 0 ? baseline_step_s : target_s.at(0); }
  double c() const { return target_s.empty() || target_s[0] <= 0 ? 0 : draft_step_s / target_s[0]; }
};

// One start position of the target's text: the draft rollout from the true prefix.
struct AcceptanceRollout {
  std::vector<float> accept;       // [m] r_j: P(rollout token j passes | tokens < j passed)
  std::vector<float> top_prob;     // [m] max_x q_j(x) (1 for deterministic drafters): p_min rule
  std::vector<float> entropy;      // [m] H(q_j) / log(vocab) (entropy-guided gamma policy)
  float beta = 0;                  // Corollary 3.6 at this position: sum_x min(p_t(x), q_t(x)/...)
                                   // with lenience; -1 when the drafter proposed nothing here
  float lenient_tv = 0;            // sampling with lenience < 1: total variation between the
                                   // emitted token's law and p_t (0 when exact)
  std::vector<float> top_mass;     // [B] at the true prefix: P(one of the drafter's b likeliest
                                   // proposals passes), b = 1..B, for top-b tree levels (greedy:
                                   // 1 if the target's argmax is among them; sampling: p_t's
                                   // mass on them); empty when not measured
  std::vector<float> sample_mass;  // [B] at the true prefix: P(one of b siblings drawn from
                                   // q_t passes SpecInfer's verification), b = 1..B, for
                                   // sampled tree levels; empty when not measured
  std::vector<float> sample_distinct;  // [B] expected distinct tokens among b draws from q_t
                                       // (a repeat gets no node): the level's node count
};

// A strided profile (measure.acceptance_stride = s > 1) has a rollout at t = offset + k s only
// (systematic sampling of the text's positions, offset seeded per prompt). The walks below
// then take, at each position, the prompt's mixture of measured rollouts (the exact recursion
// averages the round over them; Monte Carlo walks draw one per visit) rather than the nearest
// one: copying a rollout to its neighbours would let a walk meet the same rejecting rollout
// round after round (a round that accepts nothing advances one position), so bad rollouts
// would be over-visited and tokens per round biased low (18% at gamma 8 on the tiny zoo, found
// by measurement). Each position enters a walk's path once and the expected cost is
// multilinear in the per-position laws, so with exchangeable positions the mixture gives the
// same expectation. The summaries average the measured positions.
struct AcceptancePrompt {
  std::string prompt_id;
  std::vector<AcceptanceRollout> positions;  // [M] positions[k]: the rollout at t = offset + k
                                             // stride; M = N (every t) at stride 1
  int64_t n_tokens = -1;                     // N, tokens the target generated; -1: M
  int64_t stride = 1, offset = 0;
};

// N, the tokens the prompt's text has (positions.size() at stride 1).
int64_t acceptance_prompt_tokens(const AcceptancePrompt& p);
// The rollout a walk visiting t uses: the one measured at t (stride 1), else one of the
// prompt's measured rollouts drawn with `draw` (see above). p.positions must not be empty.
const AcceptanceRollout& acceptance_rollout_for(const AcceptancePrompt& p, int64_t t,
                                                const RngKey& draw);
bool acceptance_prompt_strided(const AcceptancePrompt& p);

struct AcceptanceProfile {
  int max_depth = 0;  // longest rollout
  int stride = 1;     // measure.acceptance_stride it was measured at (1: every position)
  std::vector<AcceptancePrompt> prompts;
};

// Per-depth summaries of a profile (pooled over prompts and positions):
//   survival[i - 1]    = mean_t S_t(i)             P(first i drafts accepted), i = 1..max_depth
//   conditional[i - 1] = survival[i-1] / survival[i-2]  (a_i, the per-depth acceptance)
//   alpha_beta         = mean_t beta_t             the Corollary 3.6 alpha of the pair
struct AcceptanceSummary {
  std::vector<double> survival, conditional;
  double alpha_beta = 0;
  double lenient_tv = 0;    // mean over positions with a rollout
  int64_t n_positions = 0;  // positions with a rollout
};
AcceptanceSummary acceptance_summarize(const AcceptanceProfile& profile);

// Percentile bootstrap of alpha_beta with prompts resampled as clusters.
struct AlphaInterval {
  double lo = 0, hi = 0;
};
AlphaInterval acceptance_alpha_interval(const AcceptanceProfile& profile, int resamples,
                                        double confidence, uint64_t seed);

// A profile in which every position proposes `depth` tokens accepted with the configured
// probabilities accept_prob[i] (last repeating): synthetic acceptance, N positions per prompt.
AcceptanceProfile acceptance_profile_configured(const std::vector<double>& accept_prob, int depth,
                                                int n_prompts, int64_t n_positions);

struct ChainSetting {
  int gamma = 4;                 // fixed gamma, or the policy's initial / maximum gamma
  std::string policy = "fixed";  // fixed | heuristic | entropy (core/gamma_policy.h)
  double p_min = 0;              // drafting stops before a token with top probability < p_min
  int64_t max_new_tokens = 64;   // the request budget (rounds shrink near its end)
  // Tree rounds (not empty): [gamma + 1] drafted nodes of the tree cut to depth g, g = 0..gamma
  // (the decoder drops the deepest levels near the budget); a round of depth g verifies
  // tree_nodes_at_depth[g] + 1 tokens, and the acceptance profile then holds per-depth tree
  // acceptance. Empty: chain rounds.
  std::vector<double> tree_nodes_at_depth;  // expected counts: repeats of sampled siblings
                                            // get no node, so a sampled level has fewer
  std::string tree_shape;                   // the tree's key in CostProfile::draft_tree_s
  // The decoder verifies this setting's rounds on the target's device (chains; not synthetic
  // acceptance nor greedy lenience < 1, which decide on the host): priced with
  // CostProfile::verify_device_s where the profile has it.
  bool verify_on_device = false;
  int monte_carlo_walks = 200;  // walks per prompt for adaptive policies
  bool force_walks = false;     // walk a fixed gamma too (tests hold the walker to the recursion)
  uint64_t seed = 0;            // Monte Carlo stream
};

struct Prediction {
  double speedup = 0;           // predicted walltime speedup over the target alone
  double tokens_per_round = 0;  // expected tokens per target call after the prefill
  double spec_s_per_token = 0;  // predicted seconds per token, speculative
  double base_s_per_token = 0;  // T(1) + host_s(1)
  double mean_drafted_per_round = 0;
  double mean_tree_nodes_per_round = 0;  // tree rounds: drafted nodes per round (0 for chains)
};

// Throws InputError when the cost profile does not cover a round the setting needs (T(k) or
// draft cost missing) or a profile field is negative / not finite.
Prediction predict_chain(const CostProfile& cost, const AcceptanceProfile& acceptance,
                         const ChainSetting& setting);

// The acceptance side's sampling error of predict_chain: a percentile bootstrap with the
// profile's prompts resampled as clusters (a text's positions are not independent, and a
// strided profile's sampling of them stays inside its prompt), the costs held fixed. Each
// prompt's expected seconds, rounds and tokens are computed once; a resample pools the picked
// prompts as predict_chain pools them all. {NaN, NaN} bounds when fewer than two prompts or
// resamples.
struct PredictionInterval {
  double speedup_lo = 0, speedup_hi = 0;
  double tokens_per_round_lo = 0, tokens_per_round_hi = 0;
};
PredictionInterval predict_chain_interval(const CostProfile& cost,
                                          const AcceptanceProfile& acceptance,
                                          const ChainSetting& setting, int resamples,
                                          double confidence, uint64_t seed);

// How many of the rollout's tokens a round may draft, at most `cap`: the p_min rule stops
// before the first token whose top probability is below p_min (llama.cpp's
// common/speculative.cpp).
int acceptance_drafts_allowed(const AcceptanceRollout& r, int cap, double p_min);

// Checks that every rollout's accept, top_prob and entropy lists have one length; InputError
// naming the prompt.
void acceptance_profile_check(const AcceptanceProfile& acceptance);

// Checks a cost profile's fields (sizes, finite non-negative seconds, positive T(1)); InputError
// naming `where` and the field.
void cost_profile_validate(const CostProfile& cost, const std::string& where);

}  // namespace speclab
