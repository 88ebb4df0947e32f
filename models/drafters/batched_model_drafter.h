// A draft model serving many requests at once: one batched draft forward per draft step
// across the requests of a round (the draft side of batched speculative decoding, as in the
// per-request speculation of continuous-batching servers: every request drafts, one batched
// draft forward per step).
//
// Per slot it keeps what it has fed (like ModelDrafter): a round first rolls each slot back
// to the longest common prefix of what it fed and the request's committed context and
// catches up on the rest (the correction or bonus token, a new request's prompt): those
// catch-up rows of all requests are one forward. Then step i = 0..k-1 draws token i of every
// request still drafting from its last row, and feeds the drawn tokens of those that go on
// as one forward of one row per request. A request stops early at its own k or its p_min
// stop. With a BatchedLlamaRunner each request's tokens and q equal ModelDrafter's on a
// LlamaRunner bit for bit (the batched forward is batch invariant).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/drafters/batch_drafter.h"
#include "models/llama/batch_token_runner.h"

namespace speclab {

class BatchedModelDrafter : public BatchDrafter {
 public:
  // `runner` serves the draft model (one slot per request slot); `model` (may be null for a
  // test runner) is reported by model(). Both must outlive the drafter.
  BatchedModelDrafter(BatchTokenRunner& runner, std::string name, const LlamaModel* model);
  std::string name() const override { return name_; }
  int64_t vocab_size() const override { return runner_.vocab(); }
  int64_t n_slots() const override { return runner_.n_slots(); }
  void propose_batch(const std::vector<SlotDraftRequest>& requests, const SamplingParams& params,
                     const DraftStopRule& stop, std::vector<DraftProposal>* out) override;
  void reset_slot(int64_t slot) override;
  const LlamaModel* model() const override { return model_; }

 private:
  // Rolls slot back to the longest common prefix of fed_[slot] and context, keeping at least
  // the last token to feed; returns that prefix's length.
  int64_t roll_back(int64_t slot, const std::vector<int32_t>& context);

  BatchTokenRunner& runner_;
  std::string name_;
  const LlamaModel* model_;
  std::vector<std::vector<int32_t>> fed_;  // [n_slots] tokens whose K/V each slot holds
  std::vector<BatchRow> rows_;             // the current batched draft forward's rows
};

}  // namespace speclab
