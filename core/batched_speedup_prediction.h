// Throughput prediction for continuous batching: what speculative decoding buys when N
// requests are served at once by the closed loop of models/decode/batched_decoder.h, computed
// from profiles measured apart from any run (the batched counterpart of
// core/speedup_prediction.h, whose one-request profile supplies the per-request terms).
//
//   Batched cost profile  at each profiled number of sequence slots b (1, 2, 4, ...):
//                         T(b, k)        one target forward of b slots x k tokens each (the
//                                        verify of b requests drafting k - 1; k = 1: the plain
//                                        loop's step);
//                         draft(b, n)    one batched proposal of n tokens for each of b slots,
//                                        each one token behind (after a rejection);
//                         catchup(b)     extra seconds when every slot is two tokens behind
//                                        (after a fully accepted round);
//                         plain(b)       one plain step of b slots x 1 token timed right
//                                        after another (the plain loop's order; T(b, k) is
//                                        timed right after a batched proposal, a verify's);
//                         prefill        per prompt token, the target's and the drafter's
//                                        first forward over a prompt (admission);
//                         (experiments/predict/batched_cost_profile.h).
//   One-request profile   host(k): standardizing k target rows and verifying k - 1 drafts,
//                         per request (the batched round verifies request after request).
//   Acceptance profile    the per-position rollouts of the one-request prediction.
//
// The predictor replays the closed loop by Monte Carlo: a queue of every prompt x repeat in
// the measurement's order, up to N in flight, a finished request's slot taking the next
// prompt (its prefill charged to the step that admits it). A speculative round of b active
// requests, request r drafting g_r tokens (the gamma policy per request, cut by the budget
// and the p_min rule exactly as core/speedup_prediction.h does) and accepting n_r of them
// with the rollout's probabilities, costs
//   draft(b, mean g) + catchup(b) x (share of requests fully accepted last round)
//     + T(b, mean g + 1) + sum_r host(g_r + 1),
// with b and k interpolated linearly between profiled points; a plain step (and a round in
// which no request drafts) costs plain(b) + b host(1). Throughput = tokens of all requests /
// simulated time, for both loops; the per-request figure is the measurement's: sum of decode
// seconds (prefill's end to last token) over sum of tokens. Every input is a profile: nothing comes
// from the run the prediction is compared with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/speedup_prediction.h"

namespace speclab {

struct BatchedCostProfile {
  std::string source;       // "measured" | "reused"
  std::string origin;       // the file it came from ("" when measured in this run)
  int64_t context_len = 0;  // cache length of every slot when timed
  std::vector<int> slots;   // [B] profiled b, ascending, slots[0] = 1
  std::vector<std::vector<double>> target_s;       // [B][K] T(b, k), k = 1..K
  std::vector<std::vector<double>> draft_round_s;  // [B][G + 1] draft(b, n), n = 0..G ([0] = 0)
  std::vector<double> draft_catchup_s;             // [B] catchup(b)
  std::vector<double> baseline_step_s;    // [B] plain(b); empty (older files): T(b, 1) stands in
  double target_prefill_s_per_token = 0;  // one prompt prefilled alone, seconds / prompt token
  double draft_prefill_s_per_token = 0;   // the drafter's first proposal over a prompt minus a
                                          // steady one, per prompt token (0: model-free)
  int max_slots() const { return slots.empty() ? 0 : slots.back(); }
  int max_k() const { return target_s.empty() ? 0 : static_cast<int>(target_s[0].size()); }
  int max_gamma() const {
    return draft_round_s.empty() ? 0 : static_cast<int>(draft_round_s[0].size()) - 1;
  }
  // Interpolated figures (b in [1, max_slots()], k in [1, max_k()], n in [0, max_gamma()]).
  double target_at(double b, double k) const;
  double draft_at(double b, double n) const;
  double catchup_at(double b) const;
  double plain_step_at(double b) const;
};

// Checks sizes, order and that every figure is finite and >= 0; InputError naming `where`.
void batched_cost_profile_validate(const BatchedCostProfile& cost, const std::string& where);

struct BatchedSetting {
  ChainSetting chain;   // gamma, policy, p_min, budget; monte_carlo_walks walks of the loop
  int concurrency = 1;  // N: requests in flight
  int repeats = 1;      // the queue: repeats x every prompt of the profile, repeat-major
  std::vector<int64_t> prompt_lens;  // [prompts] prompt tokens (prefill); empty: 0 each
  bool draft_prefill = true;         // the drafter reads each prompt at admission (model drafters)
  // The load-following policy (predicted_gamma_by_load): gamma_by_load[b] tokens drafted by
  // every request of a round with b active; replaces chain.policy when not empty.
  std::vector<int> gamma_by_load;
};

struct BatchedPrediction {
  double throughput_speedup = 0;  // spec tokens/s over plain tokens/s, whole loop
  double speedup = 0;             // per request: (plain decode s / token) / (spec decode s / token)
  double spec_tokens_per_s = 0, base_tokens_per_s = 0;
  double tokens_per_round = 0;  // per request and round
  double mean_drafted_per_round = 0;
  double mean_active = 0;         // requests per speculative round
  double spec_round_s = 0;        // mean seconds per speculative round
  double base_step_s = 0;         // mean seconds per plain step
  double prefill_share_spec = 0;  // share of the speculative loop's time spent in admission
};

// Throws InputError when a profile does not cover the setting (b beyond the profiled slots,
// k or n beyond the profiled range) or a figure is not finite.
BatchedPrediction predict_batched(const CostProfile& one, const BatchedCostProfile& many,
                                  const AcceptanceProfile& acceptance, const BatchedSetting& s);

// The load-following gamma policy ("predicted"): for each number of active requests
// b = 1..many.max_slots(), the k in 0..g_max that maximizes the predicted throughput of a
// steady round in which every request drafts k,
//   b E[tokens | k] / (draft(b, k) + catchup(b) S(k) + T(b, k + 1) + b host(k + 1)),
//   E[tokens | k] = 1 + sum_{i=1..k} S(i),
// S(i) = survival[i - 1] (P(the first i drafts accepted), the acceptance profile's summary);
// k = 0 is the plain step, plain(b) + b host(1) for b tokens: speculation off at that load.
// Returns [max_slots + 1] (index 0 unused, 0). vLLM's adaptive speculation decides the same
// question inside the engine; here the choice is a table printed beside its regret.
std::vector<int> predicted_gamma_by_load(const CostProfile& one, const BatchedCostProfile& many,
                                         const std::vector<double>& survival, int g_max);

// The crossover as the tables state it: the largest concurrency of `grid` whose speedup is
// above 1 (speculation still pays there); 0 when none is. speedups[i] belongs to grid[i]; NaN
// entries (not measured or not predicted) are skipped.
int crossover_concurrency(const std::vector<int>& grid, const std::vector<double>& speedups);

}  // namespace speclab
