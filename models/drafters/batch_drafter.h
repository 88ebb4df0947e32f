// Drafting for many requests at once (batched speculative decoding with continuous batching):
// each active request of a round asks for up to k tokens from its own committed context; a
// BatchDrafter answers all of them, with the same law and the same random keys as
// Drafter::propose would give each request alone.
//
//   PerSlotDrafters     one Drafter per sequence slot, asked one after another: the
//                       model-free drafters (prompt lookup, n-gram), whose cost is per
//                       request anyway, and self-speculation (one runner per slot).
//   BatchedModelDrafter a draft model on a BatchTokenRunner: one batched draft forward per
//                       draft step across the requests (batched_model_drafter.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/drafters/drafter.h"
#include "models/llama/batch_token_runner.h"

namespace speclab {

struct LlamaModel;

// One request's part of a batched draft step.
struct SlotDraftRequest {
  int64_t slot = 0;                               // the request's sequence slot
  const std::vector<int32_t>* context = nullptr;  // every committed token (prompt + generated)
  int k = 0;                                      // tokens to propose (>= 1)
  RngKey key;                                     // the round's key, as Drafter::propose takes it
};

class BatchDrafter {
 public:
  virtual ~BatchDrafter() = default;
  virtual std::string name() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t n_slots() const = 0;
  // Proposes for every request: out->size() == requests.size() afterwards, (*out)[i] answering
  // requests[i] as Drafter::propose(context, k, params, stop, key) would (q on the host).
  // Each request's slot appears at most once.
  virtual void propose_batch(const std::vector<SlotDraftRequest>& requests,
                             const SamplingParams& params, const DraftStopRule& stop,
                             std::vector<DraftProposal>* out) = 0;
  // A new request takes the slot: forget what the slot held (Drafter::reset).
  virtual void reset_slot(int64_t slot) = 0;
  // The draft model (identity and cost figures); null for model-free drafters.
  virtual const LlamaModel* model() const { return nullptr; }
};

// One Drafter per slot, each asked in turn (their proposals' seconds and forward calls are
// their own).
class PerSlotDrafters : public BatchDrafter {
 public:
  explicit PerSlotDrafters(std::vector<std::unique_ptr<Drafter>> drafters);
  std::string name() const override { return drafters_.front()->name(); }
  int64_t vocab_size() const override { return drafters_.front()->vocab_size(); }
  int64_t n_slots() const override { return static_cast<int64_t>(drafters_.size()); }
  void propose_batch(const std::vector<SlotDraftRequest>& requests, const SamplingParams& params,
                     const DraftStopRule& stop, std::vector<DraftProposal>* out) override;
  void reset_slot(int64_t slot) override;
  const LlamaModel* model() const override { return drafters_.front()->model(); }
  Drafter& slot_drafter(int64_t slot) { return *drafters_.at(static_cast<size_t>(slot)); }

 private:
  std::vector<std::unique_ptr<Drafter>> drafters_;  // [n_slots]
};

// The drafter of a --draft / sweep drafter spec for n_slots concurrent requests (the grammar
// of drafter_create): a draft model runs as a BatchedModelDrafter over a batched runner of
// n_slots slots of max_ctx positions, made by make_batched (empty: the CPU's
// BatchedLlamaRunner); every other spec (lookup, ngram:, self:) is one drafter_create drafter
// per slot, on the CPU. InputError as drafter_create.
std::unique_ptr<BatchDrafter> batch_drafter_create(
    const std::string& spec, const LlamaModel& target, int64_t n_slots, int64_t max_ctx,
    const BatchTokenRunnerFactory& make_batched = {});

// batch_drafter_create for a draft model the caller has already loaded from `spec`.
std::unique_ptr<BatchDrafter> batch_drafter_create_model(
    std::unique_ptr<LlamaModel> model, const std::string& spec, const LlamaModel& target,
    int64_t n_slots, int64_t max_ctx, const BatchTokenRunnerFactory& make_batched = {});

}  // namespace speclab
