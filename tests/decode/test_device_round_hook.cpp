// The speculative decoder's device-round hook (TokenRunner::verify_on_device), tested on the
// host: a runner that "verifies where its logits are" by running the reference steps itself
// must leave every token and round record unchanged, the decoder must use what the hook
// returns (a planted wrong verifier changes the output), and synthetic acceptance keeps the
// host path. The CUDA runner's own hook is compared with the CPU in tests/cuda.
#include <gtest/gtest.h>

#include <vector>

#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "core/threads.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/llama_runner.h"
#include "tests/decode/decode_test_models.h"
#include "tests/decode/host_device_runners.h"

namespace speclab {
namespace {

using decode_test::SelfVerifyingRunner;

using decode_test::expect_same_rounds;

struct Case {
  float temperature;
  int top_k;
  float top_p;
  double lenience;
};

// Greedy and sampled (with top-k / top-p and lenience): the hook's rounds equal the host
// path's, round record for round record, and every verification went through the hook.
TEST(DeviceRoundHook, SelfVerifyingRunnerEqualsTheHostPath) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner host(*pair.target, 256);
  SelfVerifyingRunner hooked(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  for (const Case& c : {Case{0.0f, 0, 1.0f, 1.0}, Case{1.0f, 0, 1.0f, 1.0},
                        Case{0.8f, 10, 0.9f, 1.0}, Case{1.0f, 0, 1.0f, 0.5}}) {
    for (const auto& prompt : decode_test::prompts(vocab)) {
      GenerationRequest req;
      req.prompt = prompt;
      req.max_new_tokens = 20;
      req.seed = 7;
      req.sampling.temperature = c.temperature;
      req.sampling.top_k = c.top_k;
      req.sampling.top_p = c.top_p;
      SpeculativeConfig cfg;
      cfg.gamma = 4;
      cfg.draft_sampling = req.sampling;
      cfg.lenience = c.lenience;
      const GenerationResult ref = generate_speculative(host, drafter, req, cfg);
      hooked.calls = 0;
      const GenerationResult got = generate_speculative(hooked, drafter, req, cfg);
      SCOPED_TRACE(testing::Message() << "T " << c.temperature << " top_k " << c.top_k << " top_p "
                                      << c.top_p << " lenience " << c.lenience);
      expect_same_rounds(ref, got);
      EXPECT_EQ(hooked.calls, static_cast<int>(got.rounds.size()));
      for (const RoundRecord& r : got.rounds) EXPECT_EQ(r.sample_s, 0.0);  // no host sampling
    }
  }
  EXPECT_GT(hooked.calls_with_q, 0);  // a sampled model drafter hands its q over
}

// The decoder emits what the hook decides: a verifier that rejects every draft turns each
// round into one token, which the host path would not.
TEST(DeviceRoundHook, DecoderUsesTheHooksOutcome) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  SelfVerifyingRunner hooked(*pair.target, 256);
  ModelDrafter drafter(*pair.target, "self:skip=2", 256, std::vector<bool>{false, false, true});
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[1];
  req.max_new_tokens = 16;
  req.sampling.temperature = 0;
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.draft_sampling.temperature = 0;
  const GenerationResult honest = generate_speculative(hooked, drafter, req, cfg);
  int accepted = 0;
  for (const RoundRecord& r : honest.rounds) accepted += r.n_accepted;
  ASSERT_GT(accepted, 0) << "the self-draft should agree with its target sometimes";
  hooked.reject_everything = true;
  const GenerationResult rejected = generate_speculative(hooked, drafter, req, cfg);
  EXPECT_EQ(rejected.tokens, honest.tokens);  // greedy: corrections are the target's argmax
  EXPECT_EQ(rejected.rounds.size(), rejected.tokens.size());
  for (const RoundRecord& r : rejected.rounds) {
    EXPECT_EQ(r.n_accepted, 0);
    EXPECT_EQ(r.n_emitted, 1);
  }
  EXPECT_LT(honest.rounds.size(), rejected.rounds.size());
}

// Synthetic acceptance decides on the host (Bernoulli(alpha) from its own stream), and greedy
// lenience reads the raw softmax the device round lacks: the hook is not asked for either.
TEST(DeviceRoundHook, SyntheticAcceptanceAndGreedyLenienceStayOnTheHost) {
  threads_set(1);
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner host(*pair.target, 256);
  SelfVerifyingRunner hooked(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  GenerationRequest req;
  req.prompt = decode_test::prompts(vocab)[2];
  req.max_new_tokens = 16;
  req.sampling.temperature = 0;
  SpeculativeConfig synthetic;
  synthetic.gamma = 3;
  synthetic.draft_sampling.temperature = 0;
  synthetic.synthetic_accept = {0.7};
  SpeculativeConfig lenient;
  lenient.gamma = 3;
  lenient.draft_sampling.temperature = 0;
  lenient.lenience = 0.5;
  for (const SpeculativeConfig& cfg : {synthetic, lenient}) {
    const GenerationResult ref = generate_speculative(host, drafter, req, cfg);
    const GenerationResult got = generate_speculative(hooked, drafter, req, cfg);
    expect_same_rounds(ref, got);
    EXPECT_EQ(hooked.calls, 0);
  }
}

// The default hook declines and touches nothing: a plain runner keeps its cache.
TEST(DeviceRoundHook, DefaultRunnerDeclines) {
  const int64_t vocab = 64;
  decode_test::Pair pair(vocab);
  LlamaRunner runner(*pair.target, 256);
  const std::vector<int32_t> prompt = {1, 2, 3};
  runner.forward(prompt.data(), 3);
  VerifyOutcome out;
  out.n_accepted = 42;
  const std::vector<int32_t> batch = {3, 4, 5};
  EXPECT_FALSE(runner.verify_on_device(batch.data(), 2, DraftRows{}, SamplingParams{},
                                       VerifyConfig{}, RngKey{}, &out));
  EXPECT_EQ(runner.n_past(), 3);
  EXPECT_EQ(out.n_accepted, 42);
}

}  // namespace
}  // namespace speclab
