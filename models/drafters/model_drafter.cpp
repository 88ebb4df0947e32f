#include "models/drafters/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"

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
  std::vector<float> q(static_cast<size_t>(vocab));  // [vocab] standardized draft distribution
  for (int i = 0; i < k; i++) {
    sampling_standardize(q.data(), logits, vocab, params);
    const float top = *std::max_element(q.begin(), q.end());
    if (stop.p_min > 0 && top < stop.p_min) break;  // the draft is unsure: stop drafting here
    RngKey draw_key = key;
    draw_key.position = key.position + static_cast<uint64_t>(i);
    draw_key.stream = static_cast<uint32_t>(RngStream::kRngDraftSample);
    const int32_t tok = sampling_draw(q.data(), vocab, rng_uniform(draw_key));
    double entropy = 0;
    for (float x : q)
      if (x > 0) entropy -= static_cast<double>(x) * std::log(static_cast<double>(x));
    out->tokens.push_back(tok);
    out->q.insert(out->q.end(), q.begin(), q.end());
    out->top_prob.push_back(top);
    out->entropy_norm.push_back(static_cast<float>(entropy / std::log(static_cast<double>(vocab))));
    if (i + 1 < k) {
      logits = runner_.forward(&tok, 1, /*last_only=*/true);
      out->n_forward_calls++;
      fed_.push_back(tok);
    }
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace speclab
