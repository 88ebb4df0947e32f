// Tree attention in LlamaRunner: every node of a token tree, scored in one forward_tree
// pass, gets bit-for-bit the logits of the linear sequence along its path; keep_path turns
// the accepted path into an ordinary cache; trees built over several calls (as the tree
// drafter does, one level per call) see their ancestors from earlier calls.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"

namespace speclab {
namespace {

LlamaConfig tree_config() {
  LlamaConfig c;
  c.vocab_size = 50;
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.max_seq_len = 128;
  c.tie_embeddings = true;
  return c;
}

// Logits of the last token of `seq` from a fresh linear run.   returns [vocab]
std::vector<float> linear_logits(const LlamaModel& m, const std::vector<int32_t>& seq) {
  LlamaRunner r(m, 128);
  const float* l = r.forward(seq.data(), static_cast<int64_t>(seq.size()), true);
  return std::vector<float>(l, l + m.config.vocab_size);
}

bool same_bits(const float* a, const std::vector<float>& b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}

// The tree of the test, below the root (the last prompt token):
//   node 0 root; 1, 2, 3 its children; 4, 5 children of 1; 6 child of 3; 7 child of 4.
const std::vector<int32_t> kParent = {-1, 0, 0, 0, 1, 1, 3, 4};
const std::vector<int32_t> kToken = {9, 11, 12, 13, 21, 22, 31, 41};

std::vector<int32_t> path_tokens(const std::vector<int32_t>& prompt_head, int32_t node) {
  std::vector<int32_t> rev;
  for (int32_t v = node; v >= 0; v = kParent[v]) rev.push_back(kToken[v]);
  std::vector<int32_t> seq = prompt_head;
  seq.insert(seq.end(), rev.rbegin(), rev.rend());
  return seq;
}

class TreeForward : public ::testing::TestWithParam<DType> {};

TEST_P(TreeForward, EveryNodeMatchesItsLinearPathBitForBit) {
  threads_set(1);
  auto model = llama_make_random(tree_config(), GetParam(), 3);
  const std::vector<int32_t> head = {1, 5, 7, 2};  // cached prompt; the root comes next
  LlamaRunner r(*model, 128);
  r.forward(head.data(), static_cast<int64_t>(head.size()));
  std::vector<int32_t> slots(kParent.size());
  for (size_t i = 0; i < kParent.size(); i++)
    slots[i] = kParent[i] < 0 ? static_cast<int32_t>(head.size()) - 1
                              : static_cast<int32_t>(head.size()) + kParent[i];
  const float* logits = r.forward_tree(kToken.data(), slots.data(), 8);
  const int64_t V = model->config.vocab_size;
  for (int32_t node = 0; node < 8; node++) {
    const auto want = linear_logits(*model, path_tokens(head, node));
    EXPECT_TRUE(same_bits(logits + node * V, want)) << "node " << node;
  }
}

TEST_P(TreeForward, KeepPathThenContinueEqualsLinearRun) {
  threads_set(1);
  auto model = llama_make_random(tree_config(), GetParam(), 4);
  const std::vector<int32_t> head = {1, 5, 7, 2};
  LlamaRunner r(*model, 128);
  r.forward(head.data(), 4);
  std::vector<int32_t> slots = {3, 4, 4, 4, 5, 5, 7, 8};  // kParent shifted by the head
  r.forward_tree(kToken.data(), slots.data(), 8);
  // Accept root -> 1 -> 4 -> 7 (slots 4, 5, 8, 11).
  const std::vector<int32_t> keep = {4, 5, 8, 11};
  r.keep_path(4, keep.data(), 4);
  ASSERT_EQ(r.n_past(), 8);
  const int32_t next = 17;
  const float* got = r.forward(&next, 1);
  auto seq = path_tokens(head, 7);
  seq.push_back(next);
  EXPECT_TRUE(same_bits(got, linear_logits(*model, seq)));
}

TEST_P(TreeForward, LevelsOverSeveralCallsSeeEarlierLevels) {
  threads_set(1);
  auto model = llama_make_random(tree_config(), GetParam(), 5);
  const std::vector<int32_t> head = {1, 5, 7, 2, 9};  // root 9 already cached (slot 4)
  LlamaRunner r(*model, 128);
  r.forward(head.data(), 5);
  const int64_t V = model->config.vocab_size;
  // Level 1: children 11, 12 of the root; level 2: 21 under 11, 31 and 32 under 12.
  const std::vector<int32_t> l1 = {11, 12}, p1 = {4, 4};
  r.forward_tree(l1.data(), p1.data(), 2);
  const std::vector<int32_t> l2 = {21, 31, 32}, p2 = {5, 6, 6};
  const float* logits = r.forward_tree(l2.data(), p2.data(), 3);
  const std::vector<std::vector<int32_t>> paths = {{11, 21}, {12, 31}, {12, 32}};
  for (int i = 0; i < 3; i++) {
    auto seq = head;
    seq.insert(seq.end(), paths[i].begin(), paths[i].end());
    EXPECT_TRUE(same_bits(logits + i * V, linear_logits(*model, seq))) << "level-2 node " << i;
  }
  // Roll the tree back entirely: the linear cache is intact.
  r.truncate(5);
  const int32_t t = 3;
  auto seq = head;
  seq.push_back(t);
  EXPECT_TRUE(same_bits(r.forward(&t, 1), linear_logits(*model, seq)));
}

INSTANTIATE_TEST_SUITE_P(DTypes, TreeForward, ::testing::Values(DType::F32, DType::BF16));

TEST(TreeForwardErrors, ParentMustPrecedeNode) {
  auto model = llama_make_random(tree_config(), DType::F32, 6);
  LlamaRunner r(*model, 128);
  const std::vector<int32_t> head = {1, 2};
  r.forward(head.data(), 2);
  const std::vector<int32_t> toks = {3, 4}, bad = {1, 3};  // node 1 names itself (slot 3)
  EXPECT_THROW(r.forward_tree(toks.data(), bad.data(), 2), InputError);
  const std::vector<int32_t> too_low = {-2, 1};
  EXPECT_THROW(r.forward_tree(toks.data(), too_low.data(), 2), InputError);
}

// A backend without tree attention (the CUDA runner so far) refuses trees with an InputError
// (exit 2 in the CLI) instead of computing something else.
TEST(TreeForwardErrors, BackendWithoutTreeAttentionRefuses) {
  struct LinearOnly : TokenRunner {
    const float* forward(const int32_t*, int64_t, bool) override { return nullptr; }
    void truncate(int64_t) override {}
    int64_t n_past() const override { return 0; }
    int64_t max_ctx() const override { return 8; }
    int64_t vocab() const override { return 4; }
  } runner;
  const int32_t tok = 1, parent = -1;
  try {
    runner.forward_tree(&tok, &parent, 1);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no tree attention"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runner.keep_path(0, &tok, 1), InputError);
}

}  // namespace
}  // namespace speclab
