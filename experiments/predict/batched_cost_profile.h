// The batched cost profile of a draft/target pair (core/batched_speedup_prediction.h),
// measured in isolation on the runners the continuous-batching loop uses: no speculative
// round runs. Every slot holds the same context of context_len tokens; one repetition times,
// for each profiled slot count b (ascending),
//   T(b, k)        one target forward of b slots x k tokens, all rows' logits (the verify of
//                  b requests), right after an untimed batched proposal (a verify follows
//                  the round's drafting), the slots truncated back after it, k = 1..K;
//   plain(b)       the mean of a run of consecutive forwards of b slots x 1 token at
//                  advancing positions, each slot's last row, after an untimed one, as long as
//                  the one-request profile's plain run (plain_run_goes_on) (the plain loop's
//                  steps follow each other; its time per token is their mean);
//   draft(b, n)    one batched proposal of n tokens for each of b slots, each one token
//                  behind (the state after a rejection), after a target forward (which, as
//                  in the loop, has pushed the draft's weights out of the caches), n = 1..G;
//   two behind(b)  the same one-token proposal with every slot two tokens behind;
// then, on slot 0 alone, the target's prefill of prompt_len - 1 tokens (as admission
// prefills) and the drafter's first proposal after a reset over a prompt_len context. Each
// figure is the median over repetitions (rep 0 warms and is not kept; the loop pays
// interference as it comes, as cost_profile.h says); catch-up(b) = two
// behind(b) - draft(b, 1) and the drafter's prefill per token = (first proposal - draft(1, 1))
// / (prompt_len - 1). Host costs are the one-request profile's (per request).
#pragma once

#include <cstdint>
#include <vector>

#include "core/batched_speedup_prediction.h"
#include "core/sampling.h"
#include "experiments/predict/cost_profile.h"
#include "models/drafters/batch_drafter.h"
#include "models/llama/batch_token_runner.h"

namespace speclab {

struct BatchedCostRequest {
  std::vector<int32_t> context;  // tokens to repeat or cut to the lengths below
  int64_t context_len = 64;      // cache length of every slot when timed
  int64_t prompt_len = 32;       // the prompt of the prefill figures
  std::vector<int> slots;        // ascending, starting at 1; at most the runners' slots
  int k_max = 5;                 // T(b, k) for k = 1..k_max
  int g_max = 4;                 // draft(b, n) for n = 1..g_max
  int reps = 5;
  SamplingParams draft_sampling;
};

// The spread of every timed figure over the repetitions (min, median, max), flattened b-major:
// target_s [B * K], draft_round_s [B * (G + 1)] (n = 0 entries are 0), two_behind [B],
// baseline_step_s [B] (empty in older files), the prefill figures [1] each.
struct BatchedCostSpread {
  int reps = 0;  // 0: no spread recorded
  TimingSpread target_s, draft_round_s, draft_two_behind_s, baseline_step_s, target_prefill_s,
      draft_first_call_s;
};

struct BatchedCostProfileRecord {
  BatchedCostProfile cost;
  BatchedCostSpread spread;
  CostProfileTaken taken;
};

// target and drafter need request.slots.back() slots each; their slots are reset afterwards.
// spread (may be null) receives the spread of every timed figure. InputError when the context
// limit leaves no room for the timed rounds.
BatchedCostProfile batched_cost_profile_measure(BatchTokenRunner& target, BatchDrafter& drafter,
                                                const BatchedCostRequest& request,
                                                BatchedCostSpread* spread = nullptr);

}  // namespace speclab
