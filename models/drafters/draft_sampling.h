// One draft step shared by the sampled drafters (model, n-gram): standardize the draft's
// logits with the draft's parameters, apply the p_min stop rule, draw the token with the
// RNG key of its absolute position, and record q, its top probability and entropy.
#pragma once

#include <cstdint>

#include "models/drafters/drafter.h"

namespace speclab {

// logits: [vocab] for draft position i (absolute position key.position + i).
// Appends to `out` and returns the drawn token, or -1 when the stop rule ends the round.
int32_t draft_sample_step(const float* logits, int64_t vocab, int i, const SamplingParams& params,
                          const DraftStopRule& stop, const RngKey& key, DraftProposal* out);

// The uniform draft position i is drawn with: Philox at (key.position + i, kRngDraftSample).
// A device draft step (TokenRunner::draft_on_device) gets the same u as an argument.
double draft_uniform(const RngKey& key, int i);

}  // namespace speclab
