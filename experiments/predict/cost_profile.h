// The cost profile of a draft/target pair (core/speedup_prediction.h), measured in isolation:
// no speculative round runs. One repetition times, in this order,
//   T(k)            the target's call over k tokens at a fixed cache length, k = 1..K, each
//                   right after a (untimed) draft proposal, as a verify follows the drafting;
//   plain step      the mean of a run of consecutive T(1) at advancing positions after an
//                   untimed one, the previous step's logits standardized and drawn from
//                   between them, as the plain loop's steps follow each other (its time per
//                   token is their mean); the run goes on until it has taken
//                   kPlainRunSeconds, between kPlainRunMinSteps and kPlainRunMaxSteps steps
//                   (a tiny model's first steps after other work are slower than its steady
//                   state: 4 steps of a 1 ms model read 6-20% above 48 in a row, 16 within 2%);
//   draft round(n)  a steady-state proposal of n tokens (the drafter has the context but its
//                   last token, as after a round that rejected a draft), n = 1..G;
//   catch-up        the same one-token proposal with two tokens to catch up (as after a
//                   round that accepted every draft) minus round(1);
//   prefill         a first proposal after reset over a prompt-length context minus round(1);
//   host(k)         standardizing k target rows and verifying k - 1 drafts (k = 1: the
//                   baseline's standardize + draw), on real logits of this target;
//   device verify(k)  a target that verifies on its device (TokenRunner::verify_on_device:
//                   a GPU runner) only: that whole call over [last, d_1..d_{k-1}], k = 1..K,
//                   right after a proposal of the k - 1 drafts whose q the drafter left on
//                   the device, as the decoder's round runs it (forward, standardize and
//                   verify on the device, the record back); empty for a host verifier;
//   tree(shape, g)  for each requested tree shape, the drafter's proposal of the tree cut to
//                   depth g, g = 1..depth, after a target call and one token behind, as
//                   round(n) (a tree's drafting grows with its node count, not its depth);
// and repetitions alternate, so load on a shared machine touches every figure alike; each
// figure is the median over repetitions: the loop pays a machine's interference as it comes,
// so its typical cost, not its luckiest, is what a round costs there (on the Llama-3.2 1B/3B
// shapes the minima were 4-14% below the same calls' mean time inside the decoder, unevenly
// across figures; docs/prediction.md). c (the paper's Definition 3.7) = round(1) / T(1):
// one draft step over one target step at the same context length. The spread of every timed
// figure (min, median, max over the repetitions) and the circumstances of the measurement are
// kept beside the figures, in the profile's file (experiments/predict/profile_io.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "core/speedup_prediction.h"
#include "core/token_tree.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

// The timed run behind the plain step (each repetition's figure is its mean step): at least
// kPlainRunMinSteps, then more until kPlainRunSeconds have passed, never more than
// kPlainRunMaxSteps.
inline constexpr int kPlainRunMinSteps = 4;
inline constexpr int kPlainRunMaxSteps = 16;
inline constexpr double kPlainRunSeconds = 0.020;
// Whether a plain run of `steps` steps that has taken `seconds` goes on.
inline bool plain_run_goes_on(int steps, double seconds) {
  return steps < kPlainRunMinSteps || (steps < kPlainRunMaxSteps && seconds < kPlainRunSeconds);
}

struct CostProfileRequest {
  std::vector<int32_t> context;  // tokens to repeat or cut to the lengths below
  int64_t context_len = 64;      // cache length of the timed calls
  int64_t prompt_len = 32;       // length of the drafter's prefill
  int k_max = 9;                 // T(k) and host(k) for k = 1..k_max
  int g_max = 8;                 // draft rounds of n = 1..g_max tokens
  int reps = 15;                 // at least this many repetitions,
  double min_seconds = 0;        // and more until this many seconds have passed
  int max_reps = 100000;         // (never more than this)
  SamplingParams target_sampling, draft_sampling;
  std::vector<TreeShape> trees;  // tree shapes whose drafting to time (draft_tree_s), and
                                 // with any, draft_behind_s up to the deepest + 1 behind
};

// One timed figure's spread over the repetitions, entry by entry: min <= median <= max and
// min <= mean <= max. The figure the predictor uses is the median; the min and max show how far
// the repetitions strayed from it; the mean is what a loop running for as long pays on average
// on a machine whose speed comes and goes (the mean-cost prediction, cost_range.h). mean is
// empty in files written before it was kept.
struct TimingSpread {
  std::vector<double> min, median, max;  // [n] seconds
  std::vector<double> mean;              // [n] seconds, or empty
};
// Appends the min, median (the mean of the middle two for an even count), mean and max of the
// repetitions v (not empty) as one more entry of `out`.
void timing_spread_add(TimingSpread* out, std::vector<double> v);
// The fastest of repeated timings (0 for none).
double timing_fastest(const std::vector<double>& v);
// The median of repeated timings (the mean of the middle two for an even count; 0 for none):
// the figure a profile keeps.
double timing_median(std::vector<double> v);
// Seconds since t0 on the steady clock.
double timing_since(std::chrono::steady_clock::time_point t0);

// The spread of everything cost_profile_measure times. Catch-up and prefill are differences
// of minima, so the spreads of their parts are kept: the steady one-token proposal (one token
// behind), the proposal two tokens behind, the first proposal after a reset.
struct CostProfileSpread {
  int reps = 0;                     // repetitions behind each figure; 0: no spread recorded
  TimingSpread target_s;            // [K] T(k)
  TimingSpread baseline_step_s;     // [1] the plain step (empty in older files)
  TimingSpread draft_round_s;       // [G + 1] round(n), [0] = 0
  TimingSpread host_round_s;        // [K] host(k)
  TimingSpread verify_device_s;     // [K] device verify(k); empty for a host verifier
  TimingSpread draft_one_behind_s;  // [1]
  TimingSpread draft_two_behind_s;  // [1]
  TimingSpread draft_first_call_s;  // [1]
  std::map<std::string, TimingSpread> draft_tree_s;  // shape -> [depth + 1], [0] = 0
};

// When, where and on what a cost profile was taken. Unknown: "" or -1 (files written before
// these were recorded, figures imported from another engine).
struct CostProfileTaken {
  std::string utc;                           // when its repetitions started, YYYY-MM-DDTHH:MM:SSZ
  double load_before = -1, load_after = -1;  // 1-minute load average before and after them
  std::string git_commit, git_describe;      // the source tree of the binary that timed it
  std::string cpu_model, hostname, gpu, matmul_isa;  // the machine and the kernel path it ran
  int64_t cores = 0, threads = 0;                    // logical CPUs online; threads used
  std::string target_sha256, draft_sha256;  // of the weights timed ("" for a drafter without)
};

// Parts of the timed figures, in the parts the decoders time in the loop too (RoundRecord,
// GenerationResult; docs/prediction.md, "Where a step and a round go"), medians over the
// repetitions like the figures. Not read by the predictor: they let a run show which part of
// a round or a plain step departs from the profile. Empty / negative: not recorded (older
// files, a runner that does not split its forward).
struct CostProfileParts {
  std::vector<double> target_head_s;       // [K] of T(k): the output head (final norm + vocab)
  double baseline_step_head_s = -1;        // of the plain step: the output head
  std::vector<double> host_standardize_s;  // [K] of host(k): the k rows' logits to probabilities
  std::vector<double> draft_forward_s;     // [G + 1] of round(n): the draft model's forward calls
  bool empty() const { return host_standardize_s.empty(); }
};

// A cost profile as its file holds it.
struct CostProfileRecord {
  CostProfile cost;
  CostProfileSpread spread;
  CostProfileTaken taken;
  CostProfileParts parts;
};

// The tokens a profile's calls read: the request's context repeated or cut to the profile's
// cache length, *L (the request's context_len, less where the target's limit needs room for
// the calls ahead of it), followed by the kPlainRunMaxSteps + 1 or k_max tokens those calls
// read. [*L + ahead]
std::vector<int32_t> cost_profile_tokens(const TokenRunner& target, const CostProfileRequest& r,
                                         int64_t* L);

// One repetition of the plain step: with L tokens of `tokens` in the target's cache, an
// untimed step, then a run of steps at advancing positions (plain_run_goes_on), the previous
// step's logits standardized and drawn from between them; the cache is cut back to L after.
// p: [vocab] scratch.
struct PlainRun {
  double step_s = 0;        // the run's mean step
  double head_s = 0;        // the mean of its output heads (0 when the runner does not split)
  bool split_known = true;  // every step's forward was split into its parts
};
PlainRun cost_profile_plain_run(TokenRunner& target, const int32_t* tokens, int64_t L,
                                const SamplingParams& sampling, float* p);

// spread and parts (may be null) receive the spread of every timed figure and its parts.
CostProfile cost_profile_measure(TokenRunner& target, Drafter& drafter,
                                 const CostProfileRequest& request,
                                 CostProfileSpread* spread = nullptr,
                                 CostProfileParts* parts = nullptr);

}  // namespace speclab
