// Tree speculation end to end on small random models: greedy parity with the target alone
// for every drafter and tree shape, the joint law of the first two tokens equals the
// target's for sampled and top-k trees, stops and the context limit, and the target cache
// after tree rounds equals a fresh run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/stats.h"
#include "core/threads.h"
#include "models/decode/autoregressive.h"
#include "models/decode/round_stats.h"
#include "models/decode/tree_decoder.h"
#include "tests/decode/decode_test_models.h"

namespace speclab {
namespace {

using decode_test::all_drafters;
using decode_test::exact_joint;
using decode_test::Pair;
using decode_test::prompts;

TreeSpeculativeConfig tree_config(const std::string& shape, float draft_temperature) {
  TreeSpeculativeConfig cfg;
  cfg.shape = tree_shape_parse(shape, "test");
  cfg.draft_sampling.temperature = draft_temperature;
  return cfg;
}

// Greedy tree speculation equals greedy target output token for token, on 8 prompts, for
// every drafter and shapes from a chain of 8 to wide trees, top-k and sampled.
TEST(TreeDecoder, GreedyParityAllDraftersAllShapes) {
  threads_set(1);
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  auto drafters = all_drafters(pair, vocab);
  const char* shapes[] = {"1",     "4",       "1x1x1x1x1x1x1x1", "3x1",        "2x2",
                          "3x2x1", "4x1x1x1", "2x2x2x2",         "3x3:sample", "2x2x2:sample"};
  for (const auto& prompt : prompts(vocab)) {
    GenerationRequest req;
    req.prompt = prompt;
    req.max_new_tokens = 24;
    req.sampling.temperature = 0;
    const auto ref = generate_autoregressive(target, req);
    for (auto& drafter : drafters) {
      for (const char* shape : shapes) {
        // Sampled trees draw from the draft at temperature 1, so they branch for real.
        const bool sample = std::string(shape).find("sample") != std::string::npos;
        const auto out = generate_tree_speculative(target, *drafter, req,
                                                   tree_config(shape, sample ? 1.0f : 0.0f));
        ASSERT_EQ(out.tokens, ref.tokens) << drafter->name() << " tree " << shape;
        int64_t emitted = 0;
        for (const auto& r : out.rounds) {
          EXPECT_GE(r.n_emitted, 1);
          EXPECT_LE(r.n_emitted, r.n_draft + 1);
          EXPECT_LE(r.n_draft, r.tree_nodes);
          emitted += r.n_emitted;
        }
        EXPECT_EQ(emitted, static_cast<int64_t>(out.tokens.size()));
      }
    }
  }
}

// A wider tree accepts at least as many tokens per round as its single chain on the same
// greedy run (it contains the chain: top-1 at every level), and strictly more over a run.
TEST(TreeDecoder, TopKTreeAcceptsMoreThanItsChain) {
  threads_set(1);
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  AcceptanceStats chain, tree;
  for (const auto& prompt : prompts(vocab)) {
    GenerationRequest req;
    req.prompt = prompt;
    req.max_new_tokens = 40;
    req.sampling.temperature = 0;
    chain.add(generate_tree_speculative(target, drafter, req, tree_config("1x1x1", 0)).rounds);
    tree.add(generate_tree_speculative(target, drafter, req, tree_config("4x2x1", 0)).rounds);
  }
  EXPECT_GT(tree.tau(), chain.tau()) << "tree " << tree.tau() << " chain " << chain.tau();
}

// The joint law of the first two tokens equals the target's (chi-square at significance
// 1e-3, 20000 samples over the 256 cells of a 16-token vocabulary, as in
// test_speculative_decoder.cpp), for sampled and top-k trees, temperatures, top-k, top-p,
// a draft temperature different from the target's and the chain fallback of the model-free
// drafters.
struct TreeJointCase {
  const char* name;
  float temperature;
  int top_k;
  float top_p;
  float draft_temperature;
  int drafter;  // 0 self-skip, 1 other model, 2 prompt lookup, 3 bigram
  const char* shape;
};

TEST(TreeDecoder, JointOfFirstTwoTokensIsTargets) {
  threads_set(1);
  const int64_t vocab = 16;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 64);
  auto drafters = all_drafters(pair, vocab);
  const std::vector<int32_t> prompt = {3, 5, 7, 3, 5};
  const TreeJointCase cases[] = {
      {"T=1 self 3x2 sampled", 1.0f, 0, 1.0f, 1.0f, 0, "3x2:sample"},
      {"T=1 other 3x2 top-k", 1.0f, 0, 1.0f, 1.0f, 1, "3x2:topk"},
      {"T=0.7 other 2x2x2 sampled", 0.7f, 0, 1.0f, 0.7f, 1, "2x2x2:sample"},
      {"T=1.3 top-k 5, 4x1 sampled", 1.3f, 5, 1.0f, 1.3f, 1, "4x1:sample"},
      {"T=1 top-p 0.8, 2x2 top-k", 1.0f, 0, 0.8f, 1.0f, 0, "2x2:topk"},
      {"draft T=0.4 vs 1, 3x1 sampled", 1.0f, 0, 1.0f, 0.4f, 1, "3x1:sample"},
      {"T=1 lookup chain", 1.0f, 0, 1.0f, 1.0f, 2, "2x2"},
      {"T=1 bigram chain", 1.0f, 0, 1.0f, 1.0f, 3, "2x2:sample"},
  };
  const int n_samples = 20000;
  for (const auto& c : cases) {
    SamplingParams sp{c.temperature, c.top_k, c.top_p};
    const auto expected = exact_joint(target, prompt, sp, vocab);
    std::vector<int64_t> observed(expected.size(), 0);
    TreeSpeculativeConfig cfg = tree_config(c.shape, c.draft_temperature);
    cfg.draft_sampling.top_k = c.top_k;
    cfg.draft_sampling.top_p = c.top_p;
    GenerationRequest req;
    req.prompt = prompt;
    // depth + 1 tokens: the first tree keeps every level (with 2 it would keep depth 1).
    const int depth = cfg.shape.depth();
    req.max_new_tokens = depth + 1;
    req.sampling = sp;
    req.seed = 2025;
    for (int i = 0; i < n_samples; i++) {
      req.request_id = static_cast<uint64_t>(i);
      const auto out = generate_tree_speculative(target, *drafters[c.drafter], req, cfg);
      ASSERT_GE(out.tokens.size(), 2u);
      // The depth actually used: model drafters build the whole shape; prompt lookup and the
      // bigram table propose one chain (lookup: as long as its match, at most the depth).
      if (c.drafter != 2) {
        ASSERT_EQ(out.rounds[0].n_draft, depth) << c.name;
      } else {
        ASSERT_LE(out.rounds[0].n_draft, depth) << c.name;
      }
      observed[out.tokens[0] * vocab + out.tokens[1]]++;
    }
    const auto gof = stats_chi2_gof(observed, expected);
    EXPECT_GT(gof.p_value, 1e-3) << c.name << ": chi2 " << gof.statistic << " df " << gof.df;
  }
}

// Stops apply mid-round to accepted tokens; near the context limit levels are dropped so
// the cache never overflows, and the output still equals the target's.
TEST(TreeDecoder, StopsAndContextLimit) {
  threads_set(1);
  const int64_t vocab = 64;
  Pair pair(vocab);
  ModelDrafter drafter(*pair.target, "self", 24, {false, false, true});
  LlamaRunner target(*pair.target, 24);
  GenerationRequest req;
  req.prompt = {1, 2, 3, 4, 5};
  req.max_new_tokens = 100;
  req.sampling.temperature = 0;
  const auto ref = generate_autoregressive(target, req);
  const auto out = generate_tree_speculative(target, drafter, req, tree_config("3x2x1", 0));
  EXPECT_EQ(out.stop, StopReason::kContext);
  EXPECT_EQ(out.tokens, ref.tokens);
  EXPECT_EQ(req.prompt.size() + out.tokens.size(), 25u);

  ASSERT_GT(ref.tokens.size(), 6u);
  LlamaRunner big(*pair.target, 256);
  ModelDrafter drafter2(*pair.target, "self", 256, {false, false, true});
  req.max_new_tokens = 30;
  req.stop_ids = {ref.tokens[5]};
  const size_t first =
      std::find(ref.tokens.begin(), ref.tokens.end(), ref.tokens[5]) - ref.tokens.begin();
  const auto stopped = generate_tree_speculative(big, drafter2, req, tree_config("2x2x2", 0));
  EXPECT_EQ(stopped.stop, StopReason::kEos);
  ASSERT_EQ(stopped.tokens.size(), first + 1);
  EXPECT_TRUE(std::equal(stopped.tokens.begin(), stopped.tokens.end(), ref.tokens.begin()));
}

// After sampled tree rounds the target cache holds exactly the committed text: continuing
// from it gives the logits of a fresh run.
TEST(TreeDecoder, CacheAfterTreeRoundsMatchesFreshRun) {
  threads_set(1);
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256), fresh(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  for (uint64_t seed = 0; seed < 6; seed++) {
    GenerationRequest req;
    req.prompt = prompts(vocab)[seed % 8];
    req.max_new_tokens = 17;
    req.sampling.temperature = 1.0f;
    req.seed = seed;
    const auto out = generate_tree_speculative(
        target, drafter, req, tree_config(seed % 2 ? "3x2:sample" : "2x2x1", 1.0f));
    std::vector<int32_t> all = req.prompt;
    all.insert(all.end(), out.tokens.begin(), out.tokens.end());
    ASSERT_LE(target.n_past(), static_cast<int64_t>(all.size()));
    target.truncate(std::min<int64_t>(target.n_past(), static_cast<int64_t>(all.size()) - 1));
    const int64_t from = target.n_past();
    const float* a =
        target.forward(all.data() + from, static_cast<int64_t>(all.size()) - from, true);
    std::vector<float> got(a, a + vocab);
    fresh.truncate(0);
    const float* b = fresh.forward(all.data(), static_cast<int64_t>(all.size()), true);
    for (int64_t x = 0; x < vocab; x++) ASSERT_EQ(got[x], b[x]) << "seed " << seed;
  }
}

// Prompt lookup offers one branch per distinct earlier match (longest n first, most recent
// first), merged into a prefix tree and bounded by the shape.
TEST(TreeDecoder, PromptLookupTreeBranchesOverMatches) {
  PromptLookupDrafter lookup(64, 2, 1);
  // "5 6" occurs twice before the end, followed by 7 8 and by 9 10; "6" alone also by 11.
  const std::vector<int32_t> ctx = {5, 6, 7, 8, 1, 5, 6, 9, 10, 2, 6, 11, 3, 5, 6};
  DraftTree t;
  lookup.propose_tree(ctx, tree_shape_parse("3x1", "test"), SamplingParams{}, RngKey{}, &t);
  ASSERT_EQ(t.proposals[0].size(), 3u);
  EXPECT_EQ(t.proposals[0][0].token, 9);  // most recent match of "5 6" first
  EXPECT_EQ(t.proposals[0][1].token, 7);
  EXPECT_EQ(t.proposals[0][2].token, 11);               // then the 1-gram match "6"
  EXPECT_EQ(t.token[t.proposals[0][0].child + 1], 10);  // its continuation below it
  for (const auto& props : t.proposals)
    for (const auto& pr : props) EXPECT_EQ(pr.q_row, -1);  // deterministic
  DraftTree narrow;
  lookup.propose_tree(ctx, tree_shape_parse("1x1x1", "test"), SamplingParams{}, RngKey{}, &narrow);
  EXPECT_EQ(narrow.n_nodes(), 4);  // one chain: 9 10 2
}

}  // namespace
}  // namespace speclab
