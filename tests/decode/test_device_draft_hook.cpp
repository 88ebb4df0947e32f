// The drafter's device hook (TokenRunner::draft_on_device), tested on the host: a draft runner
// that "samples where its logits are" with the reference math must leave every drafted token,
// its records (top probability, entropy, q rows) and every decoded token and round record
// unchanged; the decoder must take that path when the runner offers it (and the verifier then
// reads the rows in place), the host path otherwise, and it must emit what the hook draws (a
// planted wrong draw changes the output). The CUDA runner's own hook is compared with the CPU
// in tests/cuda/test_cuda_device_draft.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/llama_runner.h"
#include "tests/decode/decode_test_models.h"
#include "tests/decode/host_device_runners.h"

namespace speclab {
namespace {

using decode_test::expect_same_rounds;
using decode_test::HostDraftingRunner;
using decode_test::SelfVerifyingRunner;

// A factory that makes HostDraftingRunners and remembers the last one made.
struct DraftingFactory {
  HostDraftingRunner* last = nullptr;
  TokenRunnerFactory make() {
    return [this](const LlamaModel& m, int64_t ctx, std::vector<bool> skip) {
      auto r = std::make_unique<HostDraftingRunner>(m, ctx, std::move(skip));
      last = r.get();
      return std::unique_ptr<TokenRunner>(std::move(r));
    };
  }
};

struct Case {
  float temperature;
  int top_k;
  float top_p;
  float p_min;
};
const Case kCases[] = {{0.0f, 0, 1.0f, 0.0f},
                       {1.0f, 0, 1.0f, 0.0f},
                       {0.8f, 10, 0.9f, 0.0f},
                       {1.0f, 0, 1.0f, 0.07f}};  // the p_min stop rule ends rounds early

SamplingParams params_of(const Case& c) {
  SamplingParams sp;
  sp.temperature = c.temperature;
  sp.top_k = c.top_k;
  sp.top_p = c.top_p;
  return sp;
}

// A request of 20 tokens from `prompt` (seed 7) sampled as c says, and a gamma-4 speculative
// configuration drafting with the same sampling and c's stop rule.
GenerationRequest request_of(const Case& c, const std::vector<int32_t>& prompt) {
  GenerationRequest req;
  req.prompt = prompt;
  req.max_new_tokens = 20;
  req.seed = 7;
  req.sampling = params_of(c);
  return req;
}
SpeculativeConfig config_of(const Case& c) {
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling = params_of(c);
  cfg.stop_rule.p_min = c.p_min;
  return cfg;
}

// The host drafter's and the device drafter's proposals (k = 5, sampled as c says, c's stop
// rule) over growing contexts, handed to check(a, b): from each prompt, 4 rounds, each
// accepting two drafts and a correction, so the next round rolls back and catches up.
// ASSERTs inside check end only that call.
template <class Check>
void compare_proposals(ModelDrafter& host, ModelDrafter& device, const Case& c, int64_t vocab,
                       Check check) {
  DraftStopRule stop;
  stop.p_min = c.p_min;
  for (const auto& prompt : decode_test::prompts(vocab)) {
    std::vector<int32_t> context = prompt;
    for (int round = 0; round < 4; round++) {
      const RngKey key{9, 0, static_cast<uint64_t>(context.size()), 0, 0};
      DraftProposal a, b;
      host.propose(context, 5, params_of(c), stop, key, &a);
      device.propose_keeping_q_on_device(context, 5, params_of(c), stop, key, &b);
      check(a, b);
      for (size_t i = 0; i < 2 && i < a.tokens.size(); i++) context.push_back(a.tokens[i]);
      context.push_back(static_cast<int32_t>((context.back() * 7 + 3) % vocab));
    }
  }
}

// Proposal by proposal: the device path drafts the host path's tokens with the same top
// probabilities, entropies, forward calls and (fetched) q rows, bit for bit; before fetch_q
// the rows are on the "device" only.
TEST(DeviceDraftHook, DeviceProposalEqualsTheHostProposal) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  DraftingFactory factory;
  ModelDrafter host(*pair.other, "other", 256);
  ModelDrafter device(*pair.other, "other", 256, {}, factory.make());
  ASSERT_NE(factory.last, nullptr);
  for (const Case& c : kCases) {
    int64_t stopped_early = 0, stopped_mid_round = 0;
    compare_proposals(host, device, c, vocab, [&](const DraftProposal& a, DraftProposal& b) {
      SCOPED_TRACE(testing::Message() << "T " << c.temperature << " p_min " << c.p_min);
      ASSERT_EQ(a.tokens, b.tokens);
      EXPECT_EQ(a.top_prob, b.top_prob);
      EXPECT_EQ(a.entropy_norm, b.entropy_norm);
      EXPECT_EQ(a.n_forward_calls, b.n_forward_calls);
      EXPECT_TRUE(b.q.empty());
      if (!b.tokens.empty()) {
        EXPECT_NE(b.q_device, nullptr);
      }
      device.fetch_q(&b);
      EXPECT_EQ(b.q_device, nullptr);
      EXPECT_EQ(a.q, b.q);
      stopped_early += a.tokens.size() < 5;
      stopped_mid_round += !a.tokens.empty() && a.tokens.size() < 5;
    });
    if (c.p_min > 0) {
      EXPECT_GT(stopped_early, 0) << "the stop rule never fired";
      EXPECT_GT(stopped_mid_round, 0) << "the stop rule never fired after a drafted token";
    }
  }
  EXPECT_GT(factory.last->calls, 0);
}

// Whole requests: a drafter that samples on its "device" and a target that verifies there
// give the all-host path's tokens and round records exactly (greedy, sampled with top-k /
// top-p, p_min), for another model and for self-speculation (both drafters go through
// ModelDrafter); the verifier read the device rows in place and nothing was downloaded.
TEST(DeviceDraftHook, DeviceDraftingEqualsTheHostPath) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner host_target(*pair.target, 256);
  SelfVerifyingRunner device_target(*pair.target, 256);
  const std::vector<bool> skip_last = {false, false, true};
  for (int self = 0; self < 2; self++) {
    const LlamaModel& draft_model = self ? *pair.target : *pair.other;
    const std::vector<bool> skip = self ? skip_last : std::vector<bool>{};
    DraftingFactory factory;
    ModelDrafter host_drafter(draft_model, "draft", 256, skip);
    ModelDrafter device_drafter(draft_model, "draft", 256, skip, factory.make());
    for (const Case& c : kCases) {
      for (const auto& prompt : decode_test::prompts(vocab)) {
        const GenerationRequest req = request_of(c, prompt);
        const SpeculativeConfig cfg = config_of(c);
        const GenerationResult ref = generate_speculative(host_target, host_drafter, req, cfg);
        device_target.calls = device_target.calls_with_device_q = 0;
        factory.last->calls = 0;
        const GenerationResult got = generate_speculative(device_target, device_drafter, req, cfg);
        SCOPED_TRACE(testing::Message() << (self ? "self" : "other") << " T " << c.temperature
                                        << " p_min " << c.p_min);
        expect_same_rounds(ref, got);
        EXPECT_EQ(ref.n_draft_calls, got.n_draft_calls);
        EXPECT_EQ(got.n_draft_calls, factory.last->calls);  // every draft call on the device
        int rounds_with_drafts = 0;
        for (const RoundRecord& r : got.rounds) rounds_with_drafts += r.n_draft > 0;
        EXPECT_EQ(device_target.calls, static_cast<int>(got.rounds.size()));
        EXPECT_EQ(device_target.calls_with_device_q, rounds_with_drafts);
        EXPECT_EQ(factory.last->downloads, 0);
        for (const RoundRecord& r : got.rounds) EXPECT_TRUE(r.verified_on_device);
        for (const RoundRecord& r : ref.rounds) EXPECT_FALSE(r.verified_on_device);
      }
    }
  }
}

// A runner that offers the whole chain (draft_chain_on_device: the drawn ids stay on the
// device, one synchronization per round): proposal by proposal the host path's tokens,
// records, forward calls and q rows, bit for bit; the drafter takes the chain for every round
// of two or more drafts without a stop rule and never with one (p_min reads each step's top
// probability before the next step). Planted: a chain that feeds every step the chain's first
// id drafts other tokens.
TEST(DeviceDraftHook, ChainProposalEqualsTheHostProposal) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  for (bool planted : {false, true}) {
    DraftingFactory factory;
    ModelDrafter host(*pair.other, "other", 256);
    ModelDrafter device(*pair.other, "other", 256, {}, factory.make());
    ASSERT_NE(factory.last, nullptr);
    factory.last->offers_chain = true;
    factory.last->chain_feeds_first = planted;
    int64_t differ = 0;
    for (const Case& c : kCases) {
      const int chains_before = factory.last->chain_calls;
      int64_t proposals = 0;
      compare_proposals(host, device, c, vocab, [&](const DraftProposal& a, DraftProposal& b) {
        device.fetch_q(&b);
        proposals++;
        if (planted) {
          differ += a.tokens != b.tokens;
          return;
        }
        SCOPED_TRACE(testing::Message() << "T " << c.temperature << " p_min " << c.p_min);
        ASSERT_EQ(a.tokens, b.tokens);
        EXPECT_EQ(a.top_prob, b.top_prob);
        EXPECT_EQ(a.entropy_norm, b.entropy_norm);
        EXPECT_EQ(a.n_forward_calls, b.n_forward_calls);
        EXPECT_EQ(a.q, b.q);
      });
      const int chains = factory.last->chain_calls - chains_before;
      if (c.p_min > 0) {
        EXPECT_EQ(chains, 0) << "a chain ran under the p_min stop rule";
      } else {
        EXPECT_EQ(chains, proposals) << "T " << c.temperature;
      }
    }
    if (planted) {
      EXPECT_GT(differ, 0) << "the planted chain drafted the host path's tokens";
    }
  }
}

// Whole requests with a drafter that offers the chain and a target that verifies on its
// "device": the all-host path's tokens and round records exactly, one chain per round with
// two or more drafts and no stop rule.
TEST(DeviceDraftHook, ChainDraftingEqualsTheHostPath) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner host_target(*pair.target, 256);
  SelfVerifyingRunner device_target(*pair.target, 256);
  DraftingFactory factory;
  ModelDrafter host_drafter(*pair.other, "draft", 256);
  ModelDrafter device_drafter(*pair.other, "draft", 256, {}, factory.make());
  factory.last->offers_chain = true;
  for (const Case& c : kCases) {
    for (const auto& prompt : decode_test::prompts(vocab)) {
      const GenerationRequest req = request_of(c, prompt);
      const SpeculativeConfig cfg = config_of(c);
      const GenerationResult ref = generate_speculative(host_target, host_drafter, req, cfg);
      factory.last->chain_calls = 0;
      const GenerationResult got = generate_speculative(device_target, device_drafter, req, cfg);
      SCOPED_TRACE(testing::Message() << "T " << c.temperature << " p_min " << c.p_min);
      expect_same_rounds(ref, got);
      int chained_rounds = 0;
      for (const RoundRecord& r : got.rounds) chained_rounds += r.n_draft >= 2;
      if (c.p_min > 0) {
        EXPECT_EQ(factory.last->chain_calls, 0);
      } else {
        EXPECT_EQ(factory.last->chain_calls, chained_rounds);
        EXPECT_GT(chained_rounds, 0);
      }
      EXPECT_EQ(factory.last->downloads, 0);
    }
  }
}

// A runner that does not offer device drafting (the default) keeps the host path: host q
// reaches the device verifier.
TEST(DeviceDraftHook, HostPathWhenNotOffered) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  SelfVerifyingRunner device_target(*pair.target, 256);
  ModelDrafter plain(*pair.other, "other", 256);
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[3];
  req.max_new_tokens = 16;
  req.sampling.temperature = 1;
  SpeculativeConfig cfg;
  cfg.gamma = 3;
  cfg.draft_sampling.temperature = 1;
  generate_speculative(device_target, plain, req, cfg);
  EXPECT_GT(device_target.calls_with_q, 0);
  EXPECT_EQ(device_target.calls_with_device_q, 0);
}

// Synthetic acceptance and greedy lenience verify on the host; the draft still samples on its
// device (its cost is the same in every mode) and the decoder fetches the rows: the same
// tokens and records as the all-host path, one download per round with drafts.
TEST(DeviceDraftHook, HostVerifiedModesFetchTheDeviceRows) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  SelfVerifyingRunner device_target(*pair.target, 256);
  LlamaRunner host_target(*pair.target, 256);
  ModelDrafter plain(*pair.other, "other", 256);
  DraftingFactory factory;
  ModelDrafter offering(*pair.other, "other", 256, {}, factory.make());
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[3];
  req.max_new_tokens = 16;
  req.sampling.temperature = 0;
  SpeculativeConfig synthetic;
  synthetic.gamma = 3;
  synthetic.draft_sampling.temperature = 1;
  synthetic.synthetic_accept = {0.7};
  SpeculativeConfig lenient;
  lenient.gamma = 3;
  lenient.draft_sampling.temperature = 0;
  lenient.lenience = 0.5;
  for (const SpeculativeConfig& c : {synthetic, lenient}) {
    const GenerationResult ref = generate_speculative(host_target, plain, req, c);
    factory.last->calls = factory.last->downloads = 0;
    device_target.calls = 0;
    const GenerationResult got = generate_speculative(device_target, offering, req, c);
    expect_same_rounds(ref, got);
    int rounds_with_drafts = 0;
    for (const RoundRecord& r : got.rounds) rounds_with_drafts += r.n_draft > 0;
    EXPECT_GT(rounds_with_drafts, 0);
    EXPECT_EQ(device_target.calls, 0);  // never asked to verify
    for (const RoundRecord& r : got.rounds) EXPECT_FALSE(r.verified_on_device);
    EXPECT_EQ(factory.last->calls, got.n_draft_calls);
    EXPECT_EQ(factory.last->downloads, rounds_with_drafts);
  }
}

// A target that verifies on the host (declines verify_on_device) gets the device rows
// fetched first: the same tokens and records as the all-host path, one download per round
// with drafts.
TEST(DeviceDraftHook, HostVerifierFetchesTheDeviceRows) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner host_target(*pair.target, 256);
  ModelDrafter host_drafter(*pair.other, "other", 256);
  DraftingFactory factory;
  ModelDrafter device_drafter(*pair.other, "other", 256, {}, factory.make());
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[5];
  req.max_new_tokens = 24;
  req.seed = 3;
  req.sampling.temperature = 1;
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 1;
  const GenerationResult ref = generate_speculative(host_target, host_drafter, req, cfg);
  const GenerationResult got = generate_speculative(host_target, device_drafter, req, cfg);
  expect_same_rounds(ref, got);
  int rounds_with_drafts = 0;
  for (const RoundRecord& r : got.rounds) rounds_with_drafts += r.n_draft > 0;
  EXPECT_GT(rounds_with_drafts, 0);
  EXPECT_EQ(factory.last->downloads, rounds_with_drafts);
  EXPECT_GT(factory.last->calls, 0);
}

// The decoder emits what the device draw decides: a draw at the mirrored uniform 1 - u (the
// same law, other draws) or at the next id changes the sampled output; the greedy output
// (one-hot q: every u draws the argmax) does not change with the mirrored uniform.
TEST(DeviceDraftHook, DecoderUsesTheDevicesDraw) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  SelfVerifyingRunner target(*pair.target, 256);
  DraftingFactory factory;
  ModelDrafter drafter(*pair.target, "self", 256, {false, false, true}, factory.make());
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[1];
  req.max_new_tokens = 32;
  req.seed = 11;
  req.sampling.temperature = 1;
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 1;
  const GenerationResult honest = generate_speculative(target, drafter, req, cfg);
  std::vector<int32_t> honest_drafts;
  for (const RoundRecord& r : honest.rounds)
    honest_drafts.insert(honest_drafts.end(), r.drafted.begin(), r.drafted.end());
  for (int bug = 0; bug < 2; bug++) {
    factory.last->mirror_u = bug == 0;
    factory.last->off_by_one = bug == 1;
    const GenerationResult wrong = generate_speculative(target, drafter, req, cfg);
    std::vector<int32_t> wrong_drafts;
    for (const RoundRecord& r : wrong.rounds)
      wrong_drafts.insert(wrong_drafts.end(), r.drafted.begin(), r.drafted.end());
    EXPECT_NE(wrong_drafts, honest_drafts) << (bug == 0 ? "mirrored u" : "off by one");
  }
  factory.last->mirror_u = true;
  factory.last->off_by_one = false;
  GenerationRequest greedy = req;
  greedy.sampling.temperature = 0;
  SpeculativeConfig greedy_cfg = cfg;
  greedy_cfg.draft_sampling.temperature = 0;
  const GenerationResult mirrored = generate_speculative(target, drafter, greedy, greedy_cfg);
  factory.last->mirror_u = false;
  const GenerationResult plain = generate_speculative(target, drafter, greedy, greedy_cfg);
  expect_same_rounds(plain, mirrored);
}

// The default hook declines and touches nothing; a host runner has no device rows.
TEST(DeviceDraftHook, DefaultRunnerDeclines) {
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner runner(*pair.target, 256);
  const std::vector<int32_t> prompt = {1, 2, 3};
  runner.forward(prompt.data(), 3);
  DraftStep step;
  const int32_t tok = 4;
  EXPECT_FALSE(runner.draft_on_device(&tok, 1, 0, SamplingParams{}, 0.5, &step));
  EXPECT_EQ(runner.n_past(), 3);
  EXPECT_EQ(step.token, -1);
  std::vector<float> host(static_cast<size_t>(vocab));
  EXPECT_THROW(runner.download_draft_rows(1, host.data()), InputError);
}

}  // namespace
}  // namespace speclab
