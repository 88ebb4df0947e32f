// tree_verify on synthetic laws: the emitted tokens follow the target's law for sampled and
// top-k trees, adversarial (p, q) pairs included; a verifier that forgets the residual
// between siblings is caught by the same test; the greedy walk follows the argmax path.
//
// The "model" is a bigram law: p(. | prev) = P[prev], q(. | prev) = Q[prev], so a tree's
// node distributions depend on the node's token and rounds chain like real decoding. A
// trial emits the first two tokens after the root token 0 (a second round when the first
// emits only one) and the pair is tested against P[0][x] P[x][y] by chi-square at
// significance 1e-3 with 30000 trials over 36 cells (expected counts >= 5 pooled), which
// detects a total-variation error of 0.03 spread over a few cells with power > 0.99.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/stats.h"
#include "core/token_tree.h"
#include "core/tree_verify.h"

namespace speclab {
namespace {

constexpr int64_t V = 6;
using Table = std::vector<std::vector<float>>;  // [V][V] rows are laws

Table random_table(uint64_t seed, float sharpness) {
  Table t(V, std::vector<float>(V));
  for (int64_t a = 0; a < V; a++) {
    double sum = 0;
    for (int64_t x = 0; x < V; x++) {
      const double u = rng_uniform(
          RngKey{seed, static_cast<uint64_t>(a), static_cast<uint64_t>(x), kRngTest, 0});
      t[a][x] = static_cast<float>(std::exp(sharpness * u));
      sum += t[a][x];
    }
    for (auto& v : t[a]) v = static_cast<float>(v / sum);
  }
  return t;
}

// Builds the tree a drafter with law Q would build below `root` (shape branching, top-k or
// sampled, repeats recorded as in ModelDrafter), with draws from `key`.
DraftTree build_tree(const Table& Q, int32_t root, const TreeShape& shape, RngKey key) {
  DraftTree t;
  t.reset(root);
  std::vector<int32_t> frontier = {0};
  std::vector<int32_t> q_row = {-1};
  for (int d = 0; d < shape.depth(); d++) {
    std::vector<int32_t> next;
    for (int32_t f : frontier) {
      const std::vector<float>& q = Q[t.token[f]];
      if (shape.mode == TreeMode::kSample) {
        const int32_t row = static_cast<int32_t>(t.q.size() / V);
        t.q.insert(t.q.end(), q.begin(), q.end());
        std::vector<int32_t> drawn;
        for (int s = 0; s < shape.branching[d]; s++) {
          const int32_t tok = sampling_draw(
              q.data(), V,
              rng_uniform(rng_key_at(key, key.position + d, kRngDraftSample, f * 16 + s)));
          if (std::find(drawn.begin(), drawn.end(), tok) != drawn.end()) {
            t.add_repeat(f, tok, row);
          } else {
            drawn.push_back(tok);
            next.push_back(t.add_child(f, tok, row));
          }
        }
      } else {
        std::vector<int32_t> ids(V);
        for (int64_t x = 0; x < V; x++) ids[x] = static_cast<int32_t>(x);
        std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return q[a] > q[b]; });
        for (int s = 0; s < shape.branching[d] && s < V; s++)
          next.push_back(t.add_child(f, ids[s], -1));
      }
    }
    frontier = next;
  }
  return t;
}

// p rows of a tree: P at each node's token.   returns [n_nodes, V]
std::vector<float> tree_p(const Table& P, const DraftTree& t) {
  std::vector<float> p;
  for (int32_t tok : t.token) p.insert(p.end(), P[tok].begin(), P[tok].end());
  return p;
}

using TreeVerifier =
    std::function<TreeVerifyOutcome(const DraftTree&, const float*, int64_t, bool, RngKey)>;

// First two emitted tokens of trials built with shape and verified by `verifier`.
std::vector<int64_t> joint_counts(const Table& P, const Table& Q, const TreeShape& shape,
                                  const TreeVerifier& verifier, int n_trials) {
  std::vector<int64_t> counts(V * V, 0);
  for (int i = 0; i < n_trials; i++) {
    std::vector<int32_t> emitted;
    int32_t root = 0;
    for (uint64_t round = 0; emitted.size() < 2; round++) {
      const RngKey key{7, static_cast<uint64_t>(i), 100 + emitted.size(), 0,
                       static_cast<uint32_t>(round)};
      const DraftTree t = build_tree(Q, root, shape, key);
      const auto p = tree_p(P, t);
      const TreeVerifyOutcome out = verifier(t, p.data(), V, false, key);
      for (int32_t node : out.path) emitted.push_back(t.token[node]);
      emitted.push_back(out.next_token);
      root = emitted.back();
    }
    counts[emitted[0] * V + emitted[1]]++;
  }
  return counts;
}

std::vector<double> joint_law(const Table& P) {
  std::vector<double> law(V * V);
  for (int64_t x = 0; x < V; x++)
    for (int64_t y = 0; y < V; y++) law[x * V + y] = double(P[0][x]) * P[x][y];
  return law;
}

struct Case {
  std::string name;
  Table P, Q;
  std::string shape;
};

std::vector<Case> cases() {
  const Table P = random_table(1, 2.0f), Q = random_table(2, 2.0f);
  Table sharp_q = random_table(3, 8.0f);  // q much sharper than p
  Table one_hot_q(V, std::vector<float>(V, 0.0f)), one_hot_p(V, std::vector<float>(V, 0.0f));
  Table disjoint_p(V, std::vector<float>(V, 0.0f)), disjoint_q(V, std::vector<float>(V, 0.0f));
  for (int64_t a = 0; a < V; a++) {
    one_hot_q[a][(a + 1) % V] = 1.0f;
    one_hot_p[a][(a + 2) % V] = 1.0f;
    for (int64_t x = 0; x < V; x++) (x % 2 ? disjoint_p : disjoint_q)[a][x] = 1.0f / 3;
  }
  return {
      {"sampled 3x2", P, Q, "3x2:sample"},
      {"sampled 2x2x2", P, Q, "2x2x2:sample"},
      {"top-k 3x2", P, Q, "3x2:topk"},
      {"top-k 2x1x1", P, Q, "2x1x1:topk"},
      {"sharp q 4x2 sampled", P, sharp_q, "4x2:sample"},
      {"one-hot q 3x1 sampled", P, one_hot_q, "3x1:sample"},
      {"one-hot p 2x2 sampled", one_hot_p, Q, "2x2:sample"},
      {"disjoint supports 3x2 sampled", disjoint_p, disjoint_q, "3x2:sample"},
      {"disjoint supports 2x2 top-k", disjoint_p, disjoint_q, "2x2:topk"},
  };
}

TEST(TreeVerify, SampledAndTopKTreesEmitTheTargetsLaw) {
  for (const Case& c : cases()) {
    const TreeShape shape = tree_shape_parse(c.shape, "test");
    const auto counts = joint_counts(c.P, c.Q, shape, tree_verify, 30000);
    const auto gof = stats_chi2_gof(counts, joint_law(c.P));
    EXPECT_GT(gof.p_value, 1e-3) << c.name << ": chi2 " << gof.statistic << " df " << gof.df;
  }
}

// The classic bug: testing every sibling against p instead of the residual left by the
// rejected ones (and correcting from the last residual only). Over-delivers tokens that
// several siblings propose; the same test must reject it.
TreeVerifyOutcome verify_without_sibling_residual(const DraftTree& t, const float* p, int64_t vocab,
                                                  bool, RngKey base) {
  TreeVerifyOutcome out;
  int32_t node = 0;
  while (true) {
    const float* pn = p + node * vocab;
    const uint64_t pos = base.position + t.depth[node];
    if (t.proposals[node].empty()) {
      out.next_token =
          sampling_draw(pn, vocab, rng_uniform(rng_key_at(base, pos, kRngBonusSample, node)));
      return out;
    }
    int32_t accepted = -1;
    std::vector<float> r(pn, pn + vocab);
    for (size_t s = 0; s < t.proposals[node].size(); s++) {
      const auto& pr = t.proposals[node][s];
      const float* q = pr.q_row >= 0 ? t.q.data() + pr.q_row * vocab : nullptr;
      const double qx = q ? q[pr.token] : 1.0;
      const double u = rng_uniform(rng_key_at(base, pos, kRngAcceptTest, node * 16 + s));
      if (pr.child >= 0 && u * qx < pn[pr.token]) {  // BUG: p instead of the residual
        accepted = pr.child;
        break;
      }
      for (int64_t x = 0; x < vocab; x++)
        r[x] = std::max(0.0f, pn[x] - (q ? q[x] : (x == pr.token ? 1.0f : 0.0f)));
    }
    if (accepted < 0) {
      out.next_token = sampling_draw(r.data(), vocab,
                                     rng_uniform(rng_key_at(base, pos, kRngResidualSample, node)));
      return out;
    }
    out.path.push_back(accepted);
    node = accepted;
  }
}

TEST(TreeVerify, JointTestRejectsVerifierWithoutSiblingResidual) {
  const Table P = random_table(1, 2.0f), Q = random_table(2, 2.0f);
  const TreeShape shape = tree_shape_parse("3x2:topk", "test");
  const auto counts = joint_counts(P, Q, shape, verify_without_sibling_residual, 30000);
  EXPECT_LT(stats_chi2_gof(counts, joint_law(P)).p_value, 1e-6);
}

TEST(TreeVerify, GreedyWalkFollowsTheArgmaxPath) {
  const Table P = random_table(4, 3.0f);
  // A top-5 tree of depth 3 contains the argmax path of P (every token but one at each
  // level): the walk must accept three tokens, then emit the argmax bonus.
  const DraftTree t = build_tree(P, 0, tree_shape_parse("5x5x5", "test"), RngKey{});
  const auto p = tree_p(P, t);
  const TreeVerifyOutcome out = tree_verify(t, p.data(), V, true, RngKey{});
  ASSERT_EQ(out.path.size(), 3u);
  int32_t prev = 0;
  for (int32_t node : out.path) {
    const int32_t want = sampling_argmax(P[prev].data(), V);
    EXPECT_EQ(t.token[node], want);
    prev = want;
  }
  EXPECT_TRUE(out.bonus);
  EXPECT_EQ(out.next_token, sampling_argmax(P[prev].data(), V));
  // A tree without the argmax child stops at once with the argmax as correction.
  DraftTree miss;
  miss.reset(0);
  const int32_t best = sampling_argmax(P[0].data(), V);
  miss.add_child(0, (best + 1) % V, -1);
  const auto pm = tree_p(P, miss);
  const TreeVerifyOutcome o2 = tree_verify(miss, pm.data(), V, true, RngKey{});
  EXPECT_TRUE(o2.path.empty());
  EXPECT_FALSE(o2.bonus);
  EXPECT_EQ(o2.next_token, best);
}

TEST(TreeVerify, RepeatedSamplesAreNeverAccepted) {
  // Sharp q: most sampled siblings repeat. Whatever the coins, a repeat never becomes the
  // accepted node (it has none), and the tree stays valid.
  const Table P = random_table(5, 1.0f), Q = random_table(6, 9.0f);
  int repeats = 0;
  for (uint64_t i = 0; i < 2000; i++) {
    const RngKey key{9, i, 100, 0, 0};
    const DraftTree t = build_tree(Q, 0, tree_shape_parse("4x2:sample", "test"), key);
    for (const auto& props : t.proposals)
      for (const auto& pr : props) repeats += pr.child < 0;
    const auto p = tree_p(P, t);
    const TreeVerifyOutcome out = tree_verify(t, p.data(), V, false, key);
    for (int32_t node : out.path) ASSERT_GT(node, 0);
  }
  EXPECT_GT(repeats, 1000);
}

TEST(TreeVerify, MalformedTreesAreInputErrors) {
  const std::vector<float> p(V * 4, 1.0f / V);
  DraftTree t;
  t.reset(0);
  t.add_child(0, 1, -1);
  t.parent[1] = 1;  // parent must precede
  EXPECT_THROW(tree_verify(t, p.data(), V, false, RngKey{}), InputError);
  DraftTree bad_token;
  bad_token.reset(0);
  bad_token.add_child(0, static_cast<int32_t>(V), -1);
  EXPECT_THROW(tree_verify(bad_token, p.data(), V, false, RngKey{}), InputError);
  DraftTree zero_q;
  zero_q.reset(0);
  zero_q.q.assign(V, 0.0f);
  zero_q.q[2] = 1.0f;
  zero_q.add_child(0, 3, 0);  // sampled from a q that has no mass on 3
  EXPECT_THROW(tree_verify(zero_q, p.data(), V, false, RngKey{}), InputError);
}

TEST(TreeShapeParse, AcceptsShapesAndNamesBadOnes) {
  const TreeShape s = tree_shape_parse("3x2x1", "tree");
  EXPECT_EQ(s.branching, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(s.mode, TreeMode::kTopK);
  EXPECT_EQ(s.n_drafted(), 3 + 6 + 6);
  EXPECT_EQ(s.to_string(), "3x2x1:topk");
  EXPECT_EQ(tree_shape_parse("2x2:sample", "tree").mode, TreeMode::kSample);
  // " 2x2", "+2" and "01x2" (seen accepted: strtol's leniency) are no spelling of a shape.
  for (const char* bad : {"", "x", "3x", "0x2", "17", "2x2:beam", "a", "3x-1", "4x4x4x4x4", " 2x2",
                          "+2", "01x2", "2x 2"}) {
    try {
      tree_shape_parse(bad, "speculative.tree");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("speculative.tree"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace speclab
