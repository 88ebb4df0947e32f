#include "models/drafters/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "models/drafters/draft_sampling.h"

namespace speclab {

ModelDrafter::ModelDrafter(const LlamaModel& model, std::string name, int64_t max_ctx,
                           std::vector<bool> skip_layers)
    : name_(std::move(name)), runner_(model, max_ctx, std::move(skip_layers)) {}

void ModelDrafter::reset() {
  runner_.truncate(0);
  fed_.clear();
}

void ModelDrafter::propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
                           const DraftStopRule& stop, const RngKey& key, DraftProposal* out) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t vocab = runner_.vocab();
  const int64_t L = static_cast<int64_t>(context.size());
  SPECLAB_ASSERT(L >= 1);
  *out = DraftProposal();
  k = static_cast<int>(std::min<int64_t>(k, runner_.max_ctx() - L));
  if (k <= 0) return;

  // Roll back to the longest common prefix of what we fed and the new context, then catch
  // up on everything after it, the last committed token included (its logits predict
  // position L).
  size_t common = 0;
  while (common < fed_.size() && common < static_cast<size_t>(L) && fed_[common] == context[common])
    common++;
  common = std::min(common, static_cast<size_t>(L - 1));  // always re-feed at least the last token
  runner_.truncate(static_cast<int64_t>(common));
  fed_.resize(common);
  const float* logits = runner_.forward(context.data() + common, L - static_cast<int64_t>(common),
                                        /*last_only=*/true);
  out->n_forward_calls++;
  fed_.insert(fed_.end(), context.begin() + static_cast<int64_t>(common), context.end());

  out->q.reserve(static_cast<size_t>(k * vocab));
  for (int i = 0; i < k; i++) {
    const int32_t tok = draft_sample_step(logits, vocab, i, params, stop, key, out);
    if (tok < 0) break;
    if (i + 1 < k) {
      logits = runner_.forward(&tok, 1, /*last_only=*/true);
      out->n_forward_calls++;
      fed_.push_back(tok);
    }
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace speclab
