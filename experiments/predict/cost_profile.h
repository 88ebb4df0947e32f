// The cost profile of a draft/target pair (core/speedup_prediction.h), measured in isolation:
// no speculative round runs. One repetition times, in this order,
//   T(k)            the target's call over k tokens at a fixed cache length, k = 1..K;
//   draft round(n)  a steady-state proposal of n tokens (the drafter has the context but its
//                   last token, as after a round that rejected a draft), n = 1..G;
//   catch-up        the same one-token proposal with two tokens to catch up (as after a
//                   round that accepted every draft) minus round(1);
//   prefill         a first proposal after reset over a prompt-length context minus round(1);
//   host(k)         standardizing k target rows and verifying k - 1 drafts (k = 1: the
//                   baseline's standardize + draw), on real logits of this target;
// and repetitions alternate, so load on a shared machine touches every figure alike; each
// figure is the minimum over repetitions. c (the paper's Definition 3.7) = round(1) / T(1):
// one draft step over one target step at the same context length.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sampling.h"
#include "core/speedup_prediction.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

struct CostProfileRequest {
  std::vector<int32_t> context;  // tokens to repeat or cut to the lengths below
  int64_t context_len = 64;      // cache length of the timed calls
  int64_t prompt_len = 32;       // length of the drafter's prefill
  int k_max = 9;                 // T(k) and host(k) for k = 1..k_max
  int g_max = 8;                 // draft rounds of n = 1..g_max tokens
  int reps = 15;
  SamplingParams target_sampling, draft_sampling;
};

CostProfile cost_profile_measure(TokenRunner& target, Drafter& drafter,
                                 const CostProfileRequest& request);

}  // namespace speclab
