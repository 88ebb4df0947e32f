#include "models/drafters/batched_model_drafter.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "models/drafters/draft_sampling.h"

namespace speclab {

BatchedModelDrafter::BatchedModelDrafter(BatchTokenRunner& runner, std::string name,
                                         const LlamaModel* model)
    : runner_(runner),
      name_(std::move(name)),
      model_(model),
      fed_(static_cast<size_t>(runner.n_slots())) {}

void BatchedModelDrafter::reset_slot(int64_t slot) {
  SPECLAB_ASSERT(slot >= 0 && slot < n_slots());
  runner_.truncate(slot, 0);
  fed_[static_cast<size_t>(slot)].clear();
}

int64_t BatchedModelDrafter::roll_back(int64_t slot, const std::vector<int32_t>& context) {
  std::vector<int32_t>& fed = fed_[static_cast<size_t>(slot)];
  const size_t L = context.size();
  size_t common = 0;
  while (common < fed.size() && common < L && fed[common] == context[common]) common++;
  common = std::min(common, L - 1);  // always re-feed at least the last token
  runner_.truncate(slot, static_cast<int64_t>(common));
  fed.resize(common);
  return static_cast<int64_t>(common);
}

void BatchedModelDrafter::propose_batch(const std::vector<SlotDraftRequest>& requests,
                                        const SamplingParams& params, const DraftStopRule& stop,
                                        std::vector<DraftProposal>* out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t vocab = runner_.vocab();
  out->assign(requests.size(), DraftProposal());

  // Who drafts this round: k clamped to the draft's context, as ModelDrafter does (a request
  // with no room drafts nothing and is not caught up).
  std::vector<size_t> drafting;  // indices into requests, in order
  std::vector<int> k_of(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); i++) {
    const SlotDraftRequest& r = requests[i];
    SPECLAB_ASSERT(r.slot >= 0 && r.slot < n_slots() && r.context != nullptr &&
                   !r.context->empty());
    const int64_t L = static_cast<int64_t>(r.context->size());
    k_of[i] = static_cast<int>(std::min<int64_t>(r.k, runner_.max_ctx() - L));
    if (k_of[i] > 0) drafting.push_back(i);
  }

  // Catch-up: every drafting request's unseen tokens, one group per slot, one forward; the
  // last row of each group predicts the request's first draft position.
  rows_.clear();
  for (size_t i : drafting) {
    const SlotDraftRequest& r = requests[i];
    const std::vector<int32_t>& context = *r.context;
    const int64_t common = roll_back(r.slot, context);
    for (size_t j = static_cast<size_t>(common); j < context.size(); j++)
      rows_.push_back(BatchRow{static_cast<int32_t>(r.slot), context[j]});
    fed_[static_cast<size_t>(r.slot)].insert(fed_[static_cast<size_t>(r.slot)].end(),
                                             context.begin() + common, context.end());
  }
  const float* logits = nullptr;  // [n_drafting, vocab] the last row of each group
  if (!drafting.empty()) logits = runner_.forward_batch(rows_, /*last_only=*/true);

  // Draft steps: position i of every request still drafting, then one forward over the
  // tokens of those that draft position i + 1.
  std::vector<size_t> next;
  for (int i = 0; !drafting.empty(); i++) {
    next.clear();
    rows_.clear();
    for (size_t g = 0; g < drafting.size(); g++) {
      const size_t r = drafting[g];
      DraftProposal& p = (*out)[r];
      p.n_forward_calls++;  // the forward whose row g this step reads
      if (p.q.empty()) p.q.reserve(static_cast<size_t>(k_of[r] * vocab));
      const int32_t tok = draft_sample_step(logits + static_cast<int64_t>(g) * vocab, vocab, i,
                                            params, stop, requests[r].key, &p);
      if (tok < 0 || i + 1 >= k_of[r]) continue;  // stopped, or drafted its k
      next.push_back(r);
      rows_.push_back(BatchRow{static_cast<int32_t>(requests[r].slot), tok});
      fed_[static_cast<size_t>(requests[r].slot)].push_back(tok);
    }
    drafting.swap(next);
    if (!drafting.empty()) logits = runner_.forward_batch(rows_, /*last_only=*/true);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (DraftProposal& p : *out) p.seconds = seconds;  // the batched step's time, shared
}

}  // namespace speclab
