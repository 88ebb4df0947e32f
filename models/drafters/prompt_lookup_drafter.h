// Prompt lookup decoding: find the most recent earlier occurrence of the context's last
// n tokens (n from max_ngram down to min_ngram) and propose the tokens that followed it.
// Deterministic (q is one-hot), so the verifier accepts d_i with probability p_i(d_i).
// Costs no model call: it shines where outputs copy from inputs (rewrite, summarize, code edit).
// For trees it offers several matches at once (SpecInfer-style candidates from the prompt).
#pragma once

#include "models/drafters/drafter.h"

namespace speclab {

class PromptLookupDrafter : public Drafter {
 public:
  PromptLookupDrafter(int64_t vocab, int max_ngram, int min_ngram = 1);
  std::string name() const override;
  int64_t vocab_size() const override { return vocab_; }
  bool deterministic() const override { return true; }
  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override;
  // Tree speculation: the continuations of several earlier matches (longest n first, then
  // most recent first) merged into a prefix tree, at most shape.branching[d] children per
  // node at depth d and shape.depth() tokens deep; all proposals deterministic.
  void propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                    const SamplingParams& params, const RngKey& key, DraftTree* out) override;
  void reset() override {}

 private:
  int64_t vocab_;
  int max_ngram_, min_ngram_;
};

}  // namespace speclab
