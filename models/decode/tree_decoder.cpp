#include "models/decode/tree_decoder.h"

#include <vector>

#include "core/error.h"
#include "core/sampling.h"
#include "core/tree_verify.h"
#include "models/decode/decode_steps.h"
#include "models/decode/law_check_round.h"

namespace speclab {

namespace {

// Buffers a tree round reuses from round to round.
struct TreeBuffers {
  DraftTree tree;
  std::vector<int32_t> parent_slot;  // [n_nodes] target cache slot of each node's parent
  std::vector<float> p;              // [n_nodes, vocab] standardized target distributions
  std::vector<int32_t> keep;         // [1 + path] slots kept: root then the accepted path
};

// One round of tree speculation (see the header for the data path).
bool speculative_tree_round(TokenRunner& target, Drafter& drafter, const GenerationRequest& request,
                            const TreeSpeculativeConfig& config, TreeBuffers& buf,
                            const DecodeRoundInput& in, RoundRecord* rec, int64_t* n_draft_calls) {
  const int64_t L = static_cast<int64_t>(in.context.size());
  const int64_t vocab = target.vocab();
  if (L > target.max_ctx()) return false;  // not even the root fits
  // Drop levels that could not be used (a round emits up to depth + 1 tokens) or that
  // would overflow the cache: (L - 1) + 1 + n_drafted <= max_ctx.
  TreeShape shape = config.shape;
  while (shape.depth() > 0 &&
         (shape.depth() > in.remaining - 1 || L + shape.n_drafted() > target.max_ctx()))
    shape.branching.pop_back();

  DraftTree& tree = buf.tree;
  if (shape.depth() > 0) {
    drafter.propose_tree(in.context, shape, config.draft_sampling, in.base, &tree);
  } else {
    tree.reset(in.context.back());
  }
  tree.token[0] = in.context.back();
  const int32_t n_nodes = tree.n_nodes();
  rec->draft_s = tree.seconds;
  *n_draft_calls += tree.n_forward_calls;

  // Verify: one target pass over the whole tree.
  auto tv = DecodeClock::now();
  buf.parent_slot.resize(n_nodes);
  buf.parent_slot[0] = static_cast<int32_t>(L - 2);  // the last cached token (-1: empty cache)
  for (int32_t i = 1; i < n_nodes; i++)
    buf.parent_slot[i] = static_cast<int32_t>(L - 1 + tree.parent[i]);
  const float* logits = target.forward_tree(tree.token.data(), buf.parent_slot.data(), n_nodes);
  rec->verify_s = seconds_since(tv);

  auto ts = DecodeClock::now();
  buf.p.resize(static_cast<size_t>(n_nodes) * vocab);
  for (int32_t i = 0; i < n_nodes; i++)
    sampling_standardize(buf.p.data() + i * vocab, logits + i * vocab, vocab, request.sampling);
  const TreeVerifyOutcome out = tree_verify(tree, buf.p.data(), vocab, in.greedy, in.base);
  rec->sample_s = seconds_since(ts);

  // Keep the root and the accepted path in the target's cache, as a linear sequence.
  buf.keep.assign(1, static_cast<int32_t>(L - 1));
  for (int32_t node : out.path) buf.keep.push_back(static_cast<int32_t>(L - 1 + node));
  target.keep_path(L - 1, buf.keep.data(), static_cast<int64_t>(buf.keep.size()));

  rec->n_draft = tree.max_depth();
  rec->tree_nodes = n_nodes - 1;
  rec->n_accepted = static_cast<int>(out.path.size());
  rec->bonus = out.bonus;
  rec->next_token = out.next_token;
  for (int32_t node : out.path) rec->drafted.push_back(tree.token[node]);
  // The in-run law check on the rows the tree was verified against (core/law_check.h).
  if (request.law_check) {
    const auto tc = DecodeClock::now();
    law_check_tree_round(buf.p.data(), vocab, out.path, in.base, rec);
    rec->law_check_s = seconds_since(tc);
  }
  return true;
}

}  // namespace

GenerationResult generate_tree_speculative(TokenRunner& target, Drafter& drafter,
                                           const GenerationRequest& request,
                                           const TreeSpeculativeConfig& config) {
  SPECLAB_INPUT_CHECK(config.shape.depth() >= 1, "tree: empty shape");
  TreeBuffers buf;
  return decode_loop(target, drafter, request,
                     [&](const DecodeRoundInput& in, RoundRecord* rec, int64_t* n_draft_calls) {
                       return speculative_tree_round(target, drafter, request, config, buf, in, rec,
                                                     n_draft_calls);
                     });
}

}  // namespace speclab
