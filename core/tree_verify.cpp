#include "core/tree_verify.h"

#include <algorithm>

#include "core/error.h"
#include "core/sampling.h"

namespace speclab {

void tree_check(const DraftTree& t, int64_t vocab) {
  const int32_t n = t.n_nodes();
  SPECLAB_INPUT_CHECK(n >= 1, "token tree: no root");
  SPECLAB_INPUT_CHECK(t.parent.size() == t.token.size() && t.depth.size() == t.token.size() &&
                          t.proposals.size() == t.token.size(),
                      "token tree: arrays of different lengths");
  SPECLAB_INPUT_CHECK(t.q.size() % static_cast<size_t>(vocab) == 0, "token tree: q holds ",
                      t.q.size(), " floats, not a multiple of the vocab ", vocab);
  const int64_t n_rows = static_cast<int64_t>(t.q.size()) / vocab;
  SPECLAB_INPUT_CHECK(t.parent[0] == -1 && t.depth[0] == 0, "token tree: node 0 is not a root");
  for (int32_t i = 0; i < n; i++) {
    SPECLAB_INPUT_CHECK(t.token[i] >= 0 && t.token[i] < vocab, "token tree: node ", i, " token ",
                        t.token[i], " outside the vocabulary [0, ", vocab, ")");
    if (i > 0) {
      SPECLAB_INPUT_CHECK(t.parent[i] >= 0 && t.parent[i] < i, "token tree: node ", i,
                          " has parent ", t.parent[i], " (expected 0..", i - 1, ")");
      SPECLAB_INPUT_CHECK(t.depth[i] == t.depth[t.parent[i]] + 1, "token tree: node ", i,
                          " has depth ", t.depth[i]);
    }
    SPECLAB_INPUT_CHECK(t.proposals[i].size() <= static_cast<size_t>(kTreeMaxBranch),
                        "token tree: node ", i, " has ", t.proposals[i].size(),
                        " proposals (at most ", kTreeMaxBranch, ")");
    for (const TreeProposal& pr : t.proposals[i]) {
      SPECLAB_INPUT_CHECK(pr.token >= 0 && pr.token < vocab, "token tree: proposal at node ", i,
                          " has token ", pr.token);
      SPECLAB_INPUT_CHECK(pr.q_row >= -1 && pr.q_row < n_rows, "token tree: proposal at node ", i,
                          " has q row ", pr.q_row, " of ", n_rows);
      if (pr.child >= 0) {
        SPECLAB_INPUT_CHECK(
            pr.child < n && t.parent[pr.child] == i && t.token[pr.child] == pr.token,
            "token tree: proposal at node ", i, " names child ", pr.child,
            " which does not match it");
      } else {
        SPECLAB_INPUT_CHECK(pr.q_row >= 0, "token tree: deterministic proposal at node ", i,
                            " has no child node");
      }
      if (pr.q_row >= 0) {
        SPECLAB_INPUT_CHECK(t.q[static_cast<size_t>(pr.q_row * vocab + pr.token)] > 0.0f,
                            "token tree: proposal ", pr.token, " at node ", i,
                            " has q = 0; it cannot have been sampled from q");
      }
    }
  }
}

TreeVerifyOutcome tree_verify(const DraftTree& tree, const float* p, int64_t vocab, bool greedy,
                              RngKey base) {
  tree_check(tree, vocab);
  SPECLAB_INPUT_CHECK(p != nullptr, "tree_verify: p is null");
  TreeVerifyOutcome out;
  int32_t node = 0;

  if (greedy) {
    while (true) {
      const int32_t best = sampling_argmax(p + node * vocab, vocab);
      int32_t next = -1;
      for (const TreeProposal& pr : tree.proposals[node]) {
        if (pr.child >= 0 && pr.token == best) {
          next = pr.child;
          break;
        }
      }
      if (next < 0) {
        out.bonus = tree.proposals[node].empty();
        out.next_token = best;
        return out;
      }
      out.path.push_back(next);
      node = next;
    }
  }

  std::vector<float> r(static_cast<size_t>(vocab));  // [vocab] the current law at `node`
  while (true) {
    const float* p_node = p + node * vocab;
    const auto& props = tree.proposals[node];
    const uint64_t pos = base.position + static_cast<uint64_t>(tree.depth[node]);
    if (props.empty()) {  // a leaf: every draft on the path accepted
      out.bonus = true;
      out.next_token =
          sampling_draw(p_node, vocab, rng_uniform(rng_key_at(base, pos, kRngBonusSample, node)));
      return out;
    }
    std::copy(p_node, p_node + vocab, r.begin());
    int32_t accepted = -1;
    for (size_t s = 0; s < props.size(); s++) {
      const TreeProposal& pr = props[s];
      const float* q_s = pr.q_row >= 0 ? tree.q.data() + pr.q_row * vocab : nullptr;
      const double q_x = q_s ? q_s[pr.token] : 1.0;
      const double r_x = r[pr.token];
      out.n_tested++;
      const uint32_t index = static_cast<uint32_t>(node * kTreeMaxBranch + static_cast<int>(s));
      // accept iff u < min(1, r(x) / q(x))  <=>  u q(x) < r(x)
      const double u = rng_uniform(rng_key_at(base, pos, kRngAcceptTest, index));
      if (u * q_x < r_x) {
        // A repeat (child -1) has r(x) = 0 exactly: its earlier sibling was rejected, which
        // needs r(x) < q(x), and max(0, r(x) - q(x)) = 0 stays 0 under renormalization.
        SPECLAB_ASSERT(pr.child >= 0);
        accepted = pr.child;
        break;
      }
      // Rejected: r <- norm(max(0, r - q_s)). A residual without mass only arises when r
      // equals q_s up to rounding (rejection was a rounding event): keep r then.
      double mass = 0.0;
      for (int64_t x = 0; x < vocab; x++) {
        const double qx = q_s ? q_s[x] : (x == pr.token ? 1.0 : 0.0);
        mass += std::max(0.0, static_cast<double>(r[x]) - qx);
      }
      if (mass > 0.0) {
        for (int64_t x = 0; x < vocab; x++) {
          const double qx = q_s ? q_s[x] : (x == pr.token ? 1.0 : 0.0);
          r[x] = static_cast<float>(std::max(0.0, static_cast<double>(r[x]) - qx) / mass);
        }
      }
    }
    if (accepted < 0) {  // every proposal rejected: the correction from the residual
      out.next_token = sampling_draw(r.data(), vocab,
                                     rng_uniform(rng_key_at(base, pos, kRngResidualSample, node)));
      return out;
    }
    out.path.push_back(accepted);
    node = accepted;
  }
}

}  // namespace speclab
