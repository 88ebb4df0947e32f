#include "models/drafters/batch_drafter.h"

#include "core/error.h"

namespace speclab {

PerSlotDrafters::PerSlotDrafters(std::vector<std::unique_ptr<Drafter>> drafters)
    : drafters_(std::move(drafters)) {
  SPECLAB_INPUT_CHECK(!drafters_.empty(), "per-slot drafters: no slot");
}

void PerSlotDrafters::propose_batch(const std::vector<SlotDraftRequest>& requests,
                                    const SamplingParams& params, const DraftStopRule& stop,
                                    std::vector<DraftProposal>* out) {
  out->resize(requests.size());
  for (size_t i = 0; i < requests.size(); i++) {
    const SlotDraftRequest& r = requests[i];
    SPECLAB_ASSERT(r.slot >= 0 && r.slot < n_slots() && r.context != nullptr);
    drafters_[static_cast<size_t>(r.slot)]->propose(*r.context, r.k, params, stop, r.key,
                                                    &(*out)[i]);
  }
}

void PerSlotDrafters::reset_slot(int64_t slot) {
  SPECLAB_ASSERT(slot >= 0 && slot < n_slots());
  drafters_[static_cast<size_t>(slot)]->reset();
}

}  // namespace speclab
