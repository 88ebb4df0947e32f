// Where a plain step and a speculative round go, in named parts, measured in the loop and
// priced by the cost profile for the same rounds (docs/prediction.md, "Where a step and a round
// go"). The parts are the ones both the decoders and the profile time:
//   plain step   the target's layers (embeddings included), its output head (final norm and
//                the vocabulary projection), the logits to probabilities, the draw, and the
//                loop's bookkeeping (the rest of the step);
//   round        the draft model's forward calls, the rest of the drafting (its sampling, the
//                model-free drafters' lookups), the verify's layers and head, the target rows'
//                logits to probabilities, Algorithm 1's accept/reject, and the bookkeeping.
// An accounting and a diagnostic, not a prediction: the profile's price is taken at the run's
// own mix of rounds (how many tokens each drafted, which followed a round that accepted all,
// how many requests' first proposals read their prompt), so it says which part departs from
// the profile, never what a cell will gain.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "experiments/predict/cost_profile.h"
#include "experiments/results/result_row.h"
#include "models/decode/generation.h"

namespace speclab {

struct TimePartsTally {
  // The plain loop, summed over its generations.
  int64_t base_tokens = 0;
  double base_decode_s = 0, base_forward_s = 0, base_head_s = 0, base_standardize_s = 0,
         base_draw_s = 0;
  bool base_head_known = true;
  // The speculative loop's chain rounds, summed.
  int64_t rounds = 0;
  double spec_decode_s = 0, draft_s = 0, draft_forward_s = 0, verify_s = 0, verify_head_s = 0,
         sample_s = 0, standardize_s = 0;
  bool verify_head_known = true;
  bool chains = true;                    // every round a chain round (a tree's drafting is not
                                         // split into forward and the rest)
  bool priceable = true;                 // every round a chain round (priced when all were
                                         // verified on the host, or all on the device)
  int64_t rounds_on_device = 0;          // rounds verified on the target's device
  std::vector<int64_t> rounds_by_draft;  // [g] rounds that drafted g tokens
  int64_t catchups = 0;                  // rounds that followed a round accepting all its drafts
  int64_t requests = 0;                  // speculative generations with a round (each one's first
                                         // proposal reads its prompt: the draft's prefill)

  void add_baseline(const GenerationResult& g);
  void add_speculative(const GenerationResult& g);
};

// Puts the loop's parts (step_*_s per plain-loop token, round_*_s per round) and, where the
// cost profile has parts and covers every round, the profile's price of the same (profile_step_*,
// profile_round_*) into the row. cost / parts may be null (no prediction).
void time_parts_put(const TimePartsTally& t, const CostProfile* cost, const CostProfileParts* parts,
                    ResultRow* row);

// The speedup the cost profile gives a run's own rounds: its plain step (the profile_step_*
// parts) times the run's tokens per round, over its price of one of the run's rounds (the
// profile_round_* parts, which time_parts_put prices at the run's round mix). Uses the run's
// rounds, so it is a diagnostic of the cost side, not a prediction. Empty when the row lacks
// the parts or tokens_per_round <= 0.
std::optional<double> time_parts_profile_speedup_at_rounds(const ResultRow& row,
                                                           double tokens_per_round);

}  // namespace speclab
