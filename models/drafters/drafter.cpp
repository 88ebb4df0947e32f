#include "models/drafters/drafter.h"

#include "core/error.h"

namespace speclab {

void Drafter::propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                           const SamplingParams& params, const RngKey& key, DraftTree* out) {
  SPECLAB_ASSERT(!context.empty());
  out->reset(context.back());
  if (shape.depth() == 0) return;
  DraftProposal chain;
  propose(context, shape.depth(), params, DraftStopRule(), key, &chain);
  const int64_t vocab = vocab_size();
  int32_t node = 0;
  for (size_t i = 0; i < chain.tokens.size(); i++) {
    // A sampled chain keeps its q rows; a deterministic one is verified as one-hot.
    const int32_t q_row = chain.q.empty() ? -1 : static_cast<int32_t>(i);
    node = out->add_child(node, chain.tokens[i], q_row);
  }
  if (!chain.q.empty()) {
    SPECLAB_ASSERT(chain.q.size() == chain.tokens.size() * static_cast<size_t>(vocab));
    out->q = std::move(chain.q);
  }
  out->seconds = chain.seconds;
  out->n_forward_calls = chain.n_forward_calls;
}

}  // namespace speclab
