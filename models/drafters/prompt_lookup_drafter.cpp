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

void PromptLookupDrafter::propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                                       const SamplingParams&, const RngKey&, DraftTree* out) {
  const auto t0 = std::chrono::steady_clock::now();
  SPECLAB_ASSERT(!context.empty());
  out->reset(context.back());
  const int64_t L = static_cast<int64_t>(context.size());
  const int depth = shape.depth();
  const int64_t max_nodes = shape.n_drafted();
  // Walks one continuation down the tree, reusing nodes with the same token and adding new
  // ones while the level's branching allows.
  auto insert = [&](int64_t follow) {
    int32_t node = 0;
    for (int d = 0; d < depth && follow + d < L; d++) {
      const int32_t tok = context[static_cast<size_t>(follow + d)];
      int32_t next = -1;
      for (const TreeProposal& pr : out->proposals[node])
        if (pr.token == tok) next = pr.child;
      if (next < 0) {
        if (static_cast<int>(out->proposals[node].size()) >= shape.branching[d] ||
            out->n_nodes() - 1 >= max_nodes)
          return;
        next = out->add_child(node, tok, /*q_row=*/-1);
      }
      node = next;
    }
  };
  for (int n = static_cast<int>(std::min<int64_t>(max_ngram_, L - 1)); n >= min_ngram_; n--) {
    const int32_t* pattern = context.data() + (L - n);
    for (int64_t s = L - n - 1; s >= 0; s--) {
      if (std::equal(pattern, pattern + n, context.data() + s)) insert(s + n);
      if (out->n_nodes() - 1 >= max_nodes) break;
    }
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace speclab
