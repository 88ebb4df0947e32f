// The in-run law check inside the decoders (models/decode/law_check_round.h): it changes no
// token (chain, tree, batched), it prices what the round produced under the right rows, it
// passes exact runs and rejects planted wrong laws: a drafter that reports a uniform q (its
// drafts then pass the test almost always: accepted without the test), and greedy lenience
// (paper A.5) at T = 0, whose accepted drafts need not be the argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/threads.h"
#include "core/token_tree.h"
#include "models/decode/batched_decoder.h"
#include "models/decode/law_check_round.h"
#include "models/decode/speculative_decoder.h"
#include "models/decode/tree_decoder.h"
#include "models/drafters/batched_model_drafter.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/batched_llama_runner.h"
#include "tests/decode/decode_test_models.h"
#include "tests/decode/planted_drafters.h"

namespace speclab {
namespace {

using decode_test::Pair;
using decode_test::prompts;

constexpr int64_t kVocab = 64;

using testing_util::UniformQDrafter;  // the plant: drafts accepted without the test

std::vector<GenerationRequest> requests(const SamplingParams& sp, int copies, bool check) {
  std::vector<GenerationRequest> out;
  uint64_t id = 0;
  for (int c = 0; c < copies; c++) {
    for (const auto& prompt : prompts(kVocab)) {
      GenerationRequest r;
      r.prompt = prompt;
      r.max_new_tokens = 40;
      r.sampling = sp;
      r.seed = 5;
      r.request_id = id++;
      r.law_check = check;
      out.push_back(r);
    }
  }
  return out;
}

LawCheckResult check_chain(TokenRunner& target, Drafter& drafter, const SamplingParams& sp,
                           int gamma, double lenience, int copies, int64_t* drafted = nullptr,
                           int64_t* rounds = nullptr, float draft_temperature = -1) {
  SpeculativeConfig cfg;
  cfg.gamma = gamma;
  cfg.draft_sampling = sp;
  if (draft_temperature >= 0) cfg.draft_sampling.temperature = draft_temperature;
  cfg.lenience = lenience;
  LawCheckTally tally;
  for (const GenerationRequest& r : requests(sp, copies, true)) {
    const GenerationResult g = generate_speculative(target, drafter, r, cfg);
    for (const RoundRecord& rec : g.rounds) {
      if (drafted) *drafted += rec.n_draft;
      if (rounds) *rounds += 1;
    }
    law_check_tally_add(g, &tally);
  }
  return law_check_evaluate(tally);
}

TEST(LawCheckRound, TheCheckChangesNoTokenAndPricesEveryProducedToken) {
  threads_set(1);
  Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  for (float t : {0.0f, 1.0f}) {
    const SamplingParams sp{t, 0, 1.0f};
    SpeculativeConfig cfg;
    cfg.gamma = 3;
    cfg.draft_sampling = sp;
    const auto on = requests(sp, 1, true), off = requests(sp, 1, false);
    for (size_t i = 0; i < on.size(); i++) {
      const GenerationResult a = generate_speculative(target, drafter, on[i], cfg);
      const GenerationResult b = generate_speculative(target, drafter, off[i], cfg);
      EXPECT_EQ(a.tokens, b.tokens);
      ASSERT_EQ(a.rounds.size(), b.rounds.size());
      for (size_t r = 0; r < a.rounds.size(); r++) {
        EXPECT_EQ(a.rounds[r].law_u.size(), static_cast<size_t>(a.rounds[r].n_accepted + 1));
        EXPECT_EQ(a.rounds[r].law_u_draft.size(), static_cast<size_t>(a.rounds[r].n_draft));
        for (float u : a.rounds[r].law_u) EXPECT_TRUE(u >= 0.0f && u < 1.0f) << u;
        EXPECT_TRUE(b.rounds[r].law_u.empty());
      }
    }
  }
}

TEST(LawCheckRound, TreeAndBatchedDecodersCarryTheCheckWithoutChangingTokens) {
  threads_set(1);
  Pair pair(kVocab);
  const SamplingParams sp{1.0f, 0, 1.0f};
  {
    LlamaRunner target(*pair.target, 256);
    ModelDrafter drafter(*pair.other, "other", 256);
    TreeSpeculativeConfig cfg;
    cfg.shape = tree_shape_parse("3x2x1:sample", "test");
    cfg.draft_sampling = sp;
    LawCheckTally tally;
    const auto on = requests(sp, 1, true), off = requests(sp, 1, false);
    for (size_t i = 0; i < on.size(); i++) {
      const GenerationResult a = generate_tree_speculative(target, drafter, on[i], cfg);
      EXPECT_EQ(a.tokens, generate_tree_speculative(target, drafter, off[i], cfg).tokens);
      for (const RoundRecord& r : a.rounds) {
        EXPECT_EQ(r.law_u.size(), static_cast<size_t>(r.n_accepted + 1));
        EXPECT_TRUE(r.law_u_draft.empty());
      }
      law_check_tally_add(a, &tally);
    }
    EXPECT_EQ(law_check_evaluate(tally).impossible, 0);
  }
  {
    const auto on = requests(sp, 1, true), off = requests(sp, 1, false);
    SpeculativeConfig cfg;
    cfg.gamma = 3;
    cfg.draft_sampling = sp;
    BatchedLlamaRunner target(*pair.target, 3, 256);
    BatchedLlamaRunner draft_runner(*pair.other, 3, 256);
    BatchedModelDrafter drafter(draft_runner, "other", pair.other.get());
    const BatchedGeneration a = generate_batched_speculative(target, drafter, on, cfg);
    const BatchedGeneration b = generate_batched_speculative(target, drafter, off, cfg);
    LlamaRunner single(*pair.target, 256);
    ModelDrafter single_drafter(*pair.other, "other", 256);
    for (size_t i = 0; i < on.size(); i++) {
      EXPECT_EQ(a.results[i].tokens, b.results[i].tokens);
      // The same u as the request's batch-1 run: the same rows, the same keys.
      const GenerationResult one = generate_speculative(single, single_drafter, on[i], cfg);
      ASSERT_EQ(a.results[i].rounds.size(), one.rounds.size());
      for (size_t r = 0; r < one.rounds.size(); r++)
        EXPECT_EQ(a.results[i].rounds[r].law_u, one.rounds[r].law_u) << i << " round " << r;
    }
  }
}

// An exact run passes at T = 1 (and with top-k, where p has zeros).
TEST(LawCheckRound, ExactRunsPass) {
  threads_set(1);
  Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  for (const SamplingParams& sp : {SamplingParams{1.0f, 0, 1.0f}, SamplingParams{0.8f, 8, 1.0f}}) {
    const LawCheckResult r = check_chain(target, drafter, sp, 4, 1.0, 4);
    EXPECT_GT(r.n_tokens, 1000);
    EXPECT_EQ(r.impossible, 0);
    EXPECT_FALSE(r.failed()) << "p = " << r.p_value;
  }
}

// The planted wrong law at gamma 4: a self-draft (the target with its last layer skipped, so it
// ranks tokens much as p does) sampled at temperature 0.5 and reported as uniform, so its sharp
// drafts are accepted almost without the test. The plant must really draft 4 per round (only a
// request's last rounds draft fewer). (A draft whose law is far from p in total variation but
// not in p's own ranking, say an unrelated random model, leaves u nearly uniform: the PIT sees a
// departure only as far as it moves the tokens' rank under p, which the power figures state.)
TEST(LawCheckRound, RejectsDraftsAcceptedWithoutTheTestAtGamma4) {
  threads_set(1);
  Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter self(*pair.target, "self:skip=2", 256, std::vector<bool>{false, false, true});
  UniformQDrafter plant(self);
  const SamplingParams sp{1.0f, 0, 1.0f};
  int64_t drafted = 0, rounds = 0;
  const LawCheckResult r = check_chain(target, plant, sp, 4, 1.0, 2, &drafted, &rounds, 0.5f);
  EXPECT_GT(static_cast<double>(drafted) / rounds, 3.5);
  EXPECT_TRUE(r.failed()) << "p = " << r.p_value << " over " << r.n_tokens << " tokens";
  // The same drafter reporting its q honestly passes.
  ModelDrafter honest(*pair.target, "self:skip=2", 256, std::vector<bool>{false, false, true});
  EXPECT_FALSE(check_chain(target, honest, sp, 4, 1.0, 2, nullptr, nullptr, 0.5f).failed());
}

// T = 0: p is one-hot, so a token of probability 0 is one that is not the argmax. Greedy
// lenience (paper A.5) accepts drafts within a factor l of the raw argmax: planted wrong tokens.
TEST(LawCheckRound, ArgmaxCheckRejectsLenientGreedyTokens) {
  threads_set(1);
  Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  const SamplingParams greedy{0.0f, 0, 1.0f};
  EXPECT_EQ(check_chain(target, drafter, greedy, 4, 1.0, 1).impossible, 0);
  const LawCheckResult lenient = check_chain(target, drafter, greedy, 4, 0.3, 1);
  EXPECT_GT(lenient.impossible, 0);
  EXPECT_TRUE(lenient.failed());
}

// By hand: a round that produced a wrong token at T = 0 has u = -1 there.
TEST(LawCheckRound, ChainRoundPricesTokensUnderTheirOwnRows) {
  // Rows [3, 4]: one-hot at 2, at 1, at 3.
  const std::vector<float> p = {0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  RoundRecord rec;
  rec.drafted = {2, 0};  // d_1 = 2 (the argmax), d_2 = 0 (not: row 1 is one-hot at 1)
  rec.n_accepted = 2;    // a verifier that accepted both
  rec.next_token = 3;
  law_check_chain_round(p.data(), 4, RngKey{1, 2, 10, 0, 0}, &rec);
  ASSERT_EQ(rec.law_u.size(), 3u);
  EXPECT_GE(rec.law_u[0], 0.0f);
  EXPECT_EQ(rec.law_u[1], -1.0f);
  EXPECT_GE(rec.law_u[2], 0.0f);
  // u of the argmax under a one-hot row is v itself, from the check's own stream.
  EXPECT_FLOAT_EQ(rec.law_u[0], static_cast<float>(rng_uniform({1, 2, 10, kRngLawCheck, 0})));
  EXPECT_EQ(rec.law_u_draft, (std::vector<float>{rec.law_u[0], -1.0f}));
  rec.n_emitted = 1;  // a stop after the first token: only it is tallied
  GenerationResult g;
  g.rounds.push_back(rec);
  LawCheckTally tally;
  law_check_tally_add(g, &tally);
  EXPECT_EQ(tally.n_tokens(), 1);
  EXPECT_EQ(tally.impossible, 0);
}

}  // namespace
}  // namespace speclab
