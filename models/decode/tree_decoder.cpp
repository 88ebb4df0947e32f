#include "models/decode/tree_decoder.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/tree_verify.h"
#include "models/decode/decode_counters.h"
#include "models/decode/decode_steps.h"

namespace speclab {

GenerationResult generate_tree_speculative(TokenRunner& target, Drafter& drafter,
                                           const GenerationRequest& request,
                                           const TreeSpeculativeConfig& config) {
  decode_count_speculative_generation();
  decode_check_prompt(request, target);
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t vocab = target.vocab();
  decode_check_drafter(drafter, target);
  SPECLAB_INPUT_CHECK(config.shape.depth() >= 1, "tree: empty shape");
  const bool greedy = request.sampling.temperature == 0.0f;

  GenerationResult result;
  target.truncate(0);
  drafter.reset();

  // Invariant between rounds: `context` holds every committed token; the target's cache
  // holds all of them but the last, which is the root of the next tree.
  std::vector<int32_t> context = request.prompt;
  auto t0 = DecodeClock::now();
  if (n_prompt > 1) target.forward(context.data(), n_prompt - 1, /*last_only=*/true);
  result.prefill_s = seconds_since(t0);

  DraftTree tree;
  std::vector<int32_t> parent_slot;  // [n_nodes] target cache slot of each node's parent
  std::vector<float> p;              // [n_nodes, vocab] standardized target distributions
  std::vector<int32_t> keep;         // [1 + path] slots kept: root then the accepted path
  uint64_t round_index = 0;
  t0 = DecodeClock::now();
  while (true) {
    const int64_t L = static_cast<int64_t>(context.size());
    const int64_t remaining = request.max_new_tokens - static_cast<int64_t>(result.tokens.size());
    if (L > target.max_ctx()) {  // not even the root fits
      result.stop = StopReason::kContext;
      break;
    }
    // Drop levels that could not be used (a round emits up to depth + 1 tokens) or that
    // would overflow the cache: (L - 1) + 1 + n_drafted <= max_ctx.
    TreeShape shape = config.shape;
    while (shape.depth() > 0 &&
           (shape.depth() > remaining - 1 || L + shape.n_drafted() > target.max_ctx()))
      shape.branching.pop_back();

    RoundRecord rec;
    const RngKey base{request.seed, request.request_id, static_cast<uint64_t>(L), 0,
                      static_cast<uint32_t>(round_index++)};
    if (shape.depth() > 0) {
      drafter.propose_tree(context, shape, config.draft_sampling, base, &tree);
    } else {
      tree.reset(context.back());
    }
    tree.token[0] = context.back();
    const int32_t n_nodes = tree.n_nodes();
    rec.draft_s = tree.seconds;
    result.n_draft_calls += tree.n_forward_calls;

    // Verify: one target pass over the whole tree.
    auto tv = DecodeClock::now();
    parent_slot.resize(n_nodes);
    parent_slot[0] = static_cast<int32_t>(L - 2);  // the last cached token (-1: empty cache)
    for (int32_t i = 1; i < n_nodes; i++)
      parent_slot[i] = static_cast<int32_t>(L - 1 + tree.parent[i]);
    const float* logits = target.forward_tree(tree.token.data(), parent_slot.data(), n_nodes);
    result.n_target_calls++;
    rec.verify_s = seconds_since(tv);

    auto ts = DecodeClock::now();
    p.resize(static_cast<size_t>(n_nodes) * vocab);
    for (int32_t i = 0; i < n_nodes; i++)
      sampling_standardize(p.data() + i * vocab, logits + i * vocab, vocab, request.sampling);
    const TreeVerifyOutcome out = tree_verify(tree, p.data(), vocab, greedy, base);
    rec.sample_s = seconds_since(ts);

    // Keep the root and the accepted path in the target's cache, as a linear sequence.
    keep.assign(1, static_cast<int32_t>(L - 1));
    for (int32_t node : out.path) keep.push_back(static_cast<int32_t>(L - 1 + node));
    target.keep_path(L - 1, keep.data(), static_cast<int64_t>(keep.size()));

    const int n_accepted = static_cast<int>(out.path.size());
    rec.n_draft = tree.max_depth();
    rec.tree_nodes = n_nodes - 1;
    rec.n_accepted = n_accepted;
    rec.bonus = out.bonus;
    rec.next_token = out.next_token;
    for (int32_t node : out.path) rec.drafted.push_back(tree.token[node]);

    bool stopped = false;
    for (int i = 0; i <= n_accepted && !stopped; i++) {
      const int32_t tok = i < n_accepted ? tree.token[out.path[i]] : out.next_token;
      stopped = decode_commit_token(request, tok, &context, &result);
      rec.n_emitted++;
    }
    result.rounds.push_back(std::move(rec));
    if (stopped) break;
  }
  result.decode_s = seconds_since(t0);
  return result;
}

}  // namespace speclab
