// Sanity flags on a measured cell: results that are impossible or too fragile to quote as
// they stand. Each flag is a short code followed by what was seen, e.g.
//   "speedup_above_bound: speedup 1.83 > tokens per round 1.33"
// Rows carry them in "flags"; tables print them; `speclab run` summarizes them at the end.
//
//   speedup_above_bound   a round costs at least one target call, so the speedup cannot exceed
//                         the tokens per round (T(k) >= T(1)); nor, at any level (below 1x
//                         too), can the plain loop's step cost more than the run's own verify
//                         and host sampling of a round (by more than 2%); past either, load or
//                         drift between the baseline and the speculative runs made the timing
//                         lie. Both bounds widen by what the cell's cost profile itself found
//                         (run_flags_bound_allowance): an engine whose T(k) < T(1) is not a lie
//   few_prompts           fewer than 8 prompts behind the bootstrap interval
//   load_above_cores      the 1-minute load average exceeded the core count during the cell
//   baseline_drift        the plain loop's seconds per token moved more than 20% from its
//                         reference: the cost profile's plain step (+ sampling) when the cell
//                         was predicted (at N > 1 the batched profile's replay of the plain
//                         loop), else the run's first cell: the machine changed speed since
//   greedy_mismatch       a greedy run differed from the target's own greedy output: the
//                         decoder is not exact (exactness_check greedy_tokens)
//   law_mismatch          the in-run law check failed (core/law_check.h): at T > 0 the
//                         emitted tokens' PIT under the target's p is not uniform, p-value
//                         below 1e-4, or a token had probability 0 under p (exactness_check
//                         pit); at T = 0 without a baseline a token was not the argmax of p
//                         (exactness_check argmax): the decoder is not exact
//   profile_stale         the run's verify seconds per round depart by more than 20% from the
//                         cost profile's T(k) at the round's mean k (one request at a time,
//                         chains), or its drafting per round departs by more than 20% from the
//                         profile's price of the same rounds and by more than 5% of the
//                         profile's round: the machine or the code changed since the profile
//                         was taken, or the profile never described this loop (the plain loop's
//                         departure from the same profile is baseline_drift); the prediction
//                         error is then not the model's alone
//   profile_unsteady      the cost profile's plain step ranged more than 20% below or above its
//                         median over the profile's repetitions: the machine changed speed
//                         while the profile was taken, so its figures (each a median over
//                         repetitions) may mix a fast and a slow machine
//   profile_load_above_cores  the load average exceeded the core count while a profile the
//                         cell's prediction used was measured
//   prediction_host_verify  rounds were verified on the target's device (standardize and
//                         verify where the logits are), but the prediction priced every
//                         round as a forward with its logits copied to the host plus the
//                         host's standardize and verify (a profile without the device's
//                         round, verify_device_s): the prediction models another round
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speclab {

struct RunFlagInputs {
  double speedup = 0;           // 0 = not measured
  double tokens_per_round = 0;  // tau
  int64_t n_prompts = 0;
  int cores = 0;
  double load_before = -1, load_after = -1;
  double baseline_s_per_token = 0, baseline_reference_s = 0;
  bool greedy_checked = false, greedy_match = true;
  // The in-run law check: "pit", "argmax", or "" when none ran; its p-value (pit), tokens
  // checked and tokens of probability 0 under p.
  std::string law_check;
  double law_p_value = 1;
  int64_t law_tokens = 0, law_impossible = 0;
  bool predicted = false;  // the row carries a profile prediction
  // The profile's view of this cell (0 / -1: not known): plain seconds per token (step + host
  // sampling), verify seconds per round at the round's mean k, the profiles' load.
  double profile_baseline_s_per_token = 0;
  double verify_s_per_round = 0, profile_verify_s_per_round = 0;
  // The run's drafting per round (the draft's forward calls and the rest of its drafting) and
  // the profile's price of the same rounds (time_parts.h: at this run's round mix, catch-ups
  // and prefills included); 0: not known (trees, no profile parts).
  double draft_s_per_round = 0, profile_draft_s_per_round = 0;
  // The run's verify and host sampling per round: what a round pays on the target's side, at
  // least a plain step's forward and sampling.
  double round_target_side_s = 0;
  // The cost profile's price of the same: T(k) + host(k) at the round's mean k (chains; 0: not
  // known). With profile_baseline_s_per_token it says whether the engine itself, timed apart,
  // runs a plain step dearer than a verify of the round (T(k) < T(1)).
  double profile_round_target_side_s = 0;
  double profile_load = -1;
  // The spread of the profile's plain step over its repetitions (0: not recorded).
  double profile_plain_min_s = 0, profile_plain_median_s = 0, profile_plain_max_s = 0;
  int64_t rounds = 0, rounds_on_device = 0;  // of the rounds, how many verified on the device
  // The prediction priced each round as the device round its profile timed
  // (CellPrediction::verify_on_device).
  bool prediction_verify_on_device = false;
};

constexpr int kFlagMinPrompts = 8;
constexpr double kFlagBaselineDrift = 0.20;
constexpr double kFlagProfileStale = 0.20;     // verify against the profile's T(k)
constexpr double kFlagProfileUnsteady = 0.20;  // the profile's plain step around its median
// The drafting is stale when it departs by kFlagProfileStale of itself and by this share of the
// profile's round (draft + verify): a model-free drafter's microseconds that double do not make
// a prediction wrong.
constexpr double kFlagStalePartOfRound = 0.05;
// The verify bound's tolerance (a plain step also samples its token on the host).
constexpr double kFlagBoundSlack = 1.02;

std::vector<std::string> run_flags_evaluate(const RunFlagInputs& in);

// The factor speedup_above_bound's two bounds are widened by: the cost profile's plain step
// (with its sampling) over its verify and sampling of the round's mean k, when above 1 (the
// engine, timed apart, runs T(k) < T(1)); 1 without a profile.
double run_flags_bound_allowance(const RunFlagInputs& in);

}  // namespace speclab
