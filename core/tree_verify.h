// Verification of a token tree against the target's distributions in one round.
//
// Sampling (seed 004 section 2.1, SpecInfer verification, built on the iterative
// speculative sampling of section 2): start at the root with r = p(root). At node v, for
// each proposal x_s of v in draw order (q_s its draft law, one-hot for a deterministic
// proposal): accept with probability min(1, r(x_s) / q_s(x_s)); on acceptance move to the
// child and restart with r = p(child); on rejection set r = norm(max(0, r - q_s)) and try
// the next proposal. When every proposal of v is rejected emit x ~ r (the correction);
// when v has no proposals (a leaf was reached) emit the bonus x ~ p(v). Each step is an
// exact sampler of p(. | path) because the proposals at v are drawn independently of the
// accept coins, so the emitted sequence has the target's law (tests/core/test_tree_verify.cpp
// and tests/decode/test_tree_decoder.cpp check it statistically).
//
// Greedy (target temperature 0, seed 004 Appendix A): at node v go to the child whose
// token is argmax p(v) if there is one; otherwise emit argmax p(v). No random draws.
//
// Random numbers: the accept test of proposal s at node v uses the key (position of v's
// children, kRngAcceptTest, v * kTreeMaxBranch + s); the correction and the bonus at v
// use (position, kRngResidualSample / kRngBonusSample, v). base.position is the absolute
// position of the depth-1 nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "core/token_tree.h"

namespace speclab {

struct TreeVerifyOutcome {
  std::vector<int32_t> path;  // accepted nodes, root excluded, in depth order
  int32_t next_token = -1;    // correction or bonus token
  bool bonus = false;         // the walk ended at a node without proposals
  int64_t n_tested = 0;       // proposals that reached an accept test
};

// p: [n_nodes, vocab] standardized target distributions, row i = p(. | path to node i).
// Throws InputError on a malformed tree (parent order, token or q_row out of range, more
// than kTreeMaxBranch proposals at a node, a sampled proposal with q = 0 at its token).
TreeVerifyOutcome tree_verify(const DraftTree& tree, const float* p, int64_t vocab, bool greedy,
                              RngKey base);

// Checks the structural invariants listed above; throws InputError naming the problem.
void tree_check(const DraftTree& tree, int64_t vocab);

}  // namespace speclab
