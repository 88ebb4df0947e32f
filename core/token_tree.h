// A tree of drafted tokens (tree speculation: SpecInfer, seed 004 section 2.1).
//
// Node 0 is the root: the last committed token, which the target has not run yet. Every
// other node is a drafted token whose parent precedes it (parent[i] < i), so the node order
// is a valid order for one target pass with a tree attention mask.
//
// The children of a node come from proposals made at that node, in the order they were
// drawn. Each proposal is either
//   sampled:        token ~ q(. | path to the node), q stored as row q_row of `q`; or
//   deterministic:  chosen without randomness (top-k of q, prompt lookup), q_row = -1,
//                   which the verifier treats as the one-hot distribution at the token.
// A sampled proposal that repeats the token of an earlier sampled sibling gets no node
// (child = -1): after that sibling is rejected the residual has no mass on the token, so
// the repeat can never be accepted, but it still updates the residual (the iterative
// speculative sampling of seed 004 section 2 counts every proposal).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speclab {

// Proposals per node of a token tree: bounds a TreeShape's branching, and tree verification
// (core/tree_verify.h) uses it to give each proposal of a node its own random draw.
constexpr int kTreeMaxBranch = 16;

struct TreeProposal {
  int32_t token = -1;
  int32_t child = -1;  // node index created by this proposal, or -1 (a repeat: no node)
  int32_t q_row = -1;  // row of DraftTree::q it was sampled from; -1 = deterministic
};

struct DraftTree {
  std::vector<int32_t> token;                        // [n_nodes]
  std::vector<int32_t> parent;                       // [n_nodes], parent[0] = -1
  std::vector<int32_t> depth;                        // [n_nodes], depth[0] = 0
  std::vector<std::vector<TreeProposal>> proposals;  // [n_nodes] in draw order
  std::vector<float> q;                              // [n_q_rows, vocab]
  double seconds = 0;                                // wall time spent drafting
  int64_t n_forward_calls = 0;                       // draft model forward calls

  // A tree holding only the root.
  void reset(int32_t root_token) {
    token.assign(1, root_token);
    parent.assign(1, -1);
    depth.assign(1, 0);
    proposals.assign(1, {});
    q.clear();
    seconds = 0;
    n_forward_calls = 0;
  }
  int32_t n_nodes() const { return static_cast<int32_t>(token.size()); }
  int32_t max_depth() const {
    int32_t d = 0;
    for (int32_t x : depth) d = x > d ? x : d;
    return d;
  }
  // Appends a child of `node` from a proposal; returns the new node's index.
  int32_t add_child(int32_t node, int32_t tok, int32_t q_row) {
    const int32_t idx = n_nodes();
    token.push_back(tok);
    parent.push_back(node);
    depth.push_back(depth[node] + 1);
    proposals.emplace_back();
    proposals[node].push_back({tok, idx, q_row});
    return idx;
  }
  // Records a sampled repeat of an earlier sibling's token (no node).
  void add_repeat(int32_t node, int32_t tok, int32_t q_row) {
    proposals[node].push_back({tok, -1, q_row});
  }
};

// The shape of the trees a drafter builds: branching[d] children for every node at depth
// d (so prod branching[0..d] nodes at depth d+1), sampled or top-k.
enum class TreeMode { kTopK, kSample };
struct TreeShape {
  std::vector<int> branching;  // e.g. {3, 2, 1}: 3 + 6 + 6 = 15 drafted nodes, depth 3
  TreeMode mode = TreeMode::kTopK;
  int depth() const { return static_cast<int>(branching.size()); }
  int64_t n_drafted() const;      // nodes below the root when every branch is filled
  std::string to_string() const;  // "3x2x1:topk"
};

// Parses "3x2x1" or "3x2x1:topk" / "2x2:sample" (branching factors 1..16, depth 1..16,
// at most 256 drafted nodes). Throws InputError naming `what` on anything else.
TreeShape tree_shape_parse(const std::string& text, const std::string& what);

}  // namespace speclab
