// Tree speculative decoding: the drafter proposes a token tree (several branches per
// position: top-k of the draft, or independent samples), the target scores every node in
// one pass with a tree attention mask, and tree_verify (core/tree_verify.h) walks the tree:
//
//   context (target cache holds all but the last token)
//     -> drafter.propose_tree(shape)               tree, root = last token
//     -> target.forward_tree(tree nodes)           p for every node, one pass
//     -> tree_verify(tree, p)                      accepted path + one more token
//     -> target.keep_path(root + path)             cache keeps [.., last, path]
//     -> RoundRecord (n_draft = tree depth, tree_nodes = drafted nodes)
//
// Exactness is the same as the chain's: sampling mode emits the target's distribution for
// any drafter and shape (iterative speculative sampling over siblings); greedy output equals
// generate_autoregressive's token for token. A chain shape (1x1x...x1) is the ordinary
// algorithm with other random keys. The tree shrinks (levels dropped) near max_new_tokens
// and the context limit, like gamma in the chain decoder.
#pragma once

#include "core/token_tree.h"
#include "models/decode/generation.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

struct TreeSpeculativeConfig {
  TreeShape shape;                // branching per depth and top-k / sample
  SamplingParams draft_sampling;  // the draft's standardization (sample mode draws from it)
};

// Generates one request with tree speculation. Resets the target and the drafter first.
// Throws InputError when the target backend has no tree attention.
GenerationResult generate_tree_speculative(TokenRunner& target, Drafter& drafter,
                                           const GenerationRequest& request,
                                           const TreeSpeculativeConfig& config);

}  // namespace speclab
