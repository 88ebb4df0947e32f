#include "models/drafters/prompt_lookup_drafter.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace speclab {

PromptLookupDrafter::PromptLookupDrafter(int64_t vocab, int max_ngram, int min_ngram)
    : vocab_(vocab), max_ngram_(max_ngram), min_ngram_(min_ngram) {
  SPECLAB_INPUT_CHECK(min_ngram >= 1 && max_ngram >= min_ngram, "drafter lookup: n=", max_ngram,
                      " min=", min_ngram, " (expected 1 <= min <= n)");
}

std::string PromptLookupDrafter::name() const {
  return str_cat("lookup:n=", max_ngram_, ",min=", min_ngram_);
}

void PromptLookupDrafter::propose(const std::vector<int32_t>& context, int k, const SamplingParams&,
                                  const DraftStopRule&, const RngKey&, DraftProposal* out) {
  const auto t0 = std::chrono::steady_clock::now();
  *out = DraftProposal();
  const int64_t L = static_cast<int64_t>(context.size());
  for (int n = std::min<int64_t>(max_ngram_, L - 1); n >= min_ngram_; n--) {
    // The pattern is context[L-n, L); search earlier starts s < L-n, latest first.
    const int32_t* pattern = context.data() + (L - n);
    for (int64_t s = L - n - 1; s >= 0; s--) {
      if (!std::equal(pattern, pattern + n, context.data() + s)) continue;
      const int64_t follow = s + n;  // first token after the match (< L by construction)
      const int64_t n_take = std::min<int64_t>(k, L - follow);
      out->tokens.assign(context.begin() + follow, context.begin() + follow + n_take);
      out->top_prob.assign(static_cast<size_t>(n_take), 1.0f);
      out->entropy_norm.assign(static_cast<size_t>(n_take), 0.0f);
      out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return;
    }
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace speclab
