// End-to-end tests of speculative decoding on small random models: greedy parity with the
// target alone, exactness of the sampled distribution, rollback, and acceptance statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>

#include "core/gamma_policy.h"
#include "core/stats.h"
#include "core/threads.h"
#include "models/decode/autoregressive.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/drafters/ngram_drafter.h"
#include "models/drafters/prompt_lookup_drafter.h"
#include "models/llama/llama_runner.h"
#include "models/llama/llama_synthetic.h"
#include "tests/decode/decode_test_models.h"
#include "tests/decode/planted_drafters.h"

namespace speclab {
namespace {

// These models are tiny: one thread avoids paying OpenMP barriers on a shared machine.
class OneThread : public ::testing::Environment {
 public:
  void SetUp() override { threads_set(1); }
};
const auto* const one_thread_env = ::testing::AddGlobalTestEnvironment(new OneThread);

using decode_test::all_drafters;
using decode_test::exact_joint;
using decode_test::Pair;
using decode_test::prompts;

// Greedy speculative output must equal greedy target output token for token, for every
// drafter and gamma 1..8.
TEST(SpeculativeDecoder, GreedyParityAllDraftersAllGammas) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  auto drafters = all_drafters(pair, vocab);
  for (const auto& prompt : prompts(vocab)) {
    GenerationRequest req;
    req.prompt = prompt;
    req.max_new_tokens = 24;
    req.sampling.temperature = 0;
    const auto ref = generate_autoregressive(target, req);
    ASSERT_EQ(ref.tokens.size(), 24u);
    for (auto& drafter : drafters) {
      for (int gamma = 1; gamma <= 8; gamma++) {
        SpeculativeConfig cfg;
        cfg.gamma = gamma;
        cfg.draft_sampling.temperature = 0;
        const auto out = generate_speculative(target, *drafter, req, cfg);
        ASSERT_EQ(out.tokens, ref.tokens) << drafter->name() << " gamma " << gamma;
        int64_t emitted = 0;
        for (const auto& r : out.rounds) {
          EXPECT_GE(r.n_emitted, 1);
          EXPECT_LE(r.n_emitted, r.n_draft + 1);
          emitted += r.n_emitted;
        }
        EXPECT_EQ(emitted, static_cast<int64_t>(out.tokens.size()));
      }
    }
  }
}

// Stops are applied to accepted tokens mid-round: with the 5th greedy token as EOS,
// generation ends right after it whatever gamma is.
TEST(SpeculativeDecoder, StopsMidRound) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  // Find a prompt whose greedy output has a token that first appears at an index >= 4.
  GenerationRequest req;
  req.max_new_tokens = 30;
  req.sampling.temperature = 0;
  GenerationResult ref;
  size_t stop_at = 0;
  for (const auto& prompt : prompts(vocab)) {
    req.prompt = prompt;
    ref = generate_autoregressive(target, req);
    for (size_t i = 4; i < ref.tokens.size() && !stop_at; i++)
      if (std::find(ref.tokens.begin(), ref.tokens.begin() + i, ref.tokens[i]) ==
          ref.tokens.begin() + i)
        stop_at = i;
    if (stop_at) break;
  }
  ASSERT_GT(stop_at, 0u) << "no prompt yields a fresh token after index 4";
  req.stop_ids = {ref.tokens[stop_at]};
  ModelDrafter drafter(*pair.target, "self", 256, {false, false, true});
  for (int gamma : {1, 3, 8}) {
    SpeculativeConfig cfg;
    cfg.gamma = gamma;
    cfg.draft_sampling.temperature = 0;
    const auto out = generate_speculative(target, drafter, req, cfg);
    ASSERT_EQ(out.tokens.size(), stop_at + 1) << "gamma " << gamma;
    EXPECT_EQ(out.stop, StopReason::kEos);
    EXPECT_TRUE(std::equal(out.tokens.begin(), out.tokens.end(), ref.tokens.begin()));
  }
}

// Near the context limit gamma shrinks so no cache overflows; generation ends with kContext.
TEST(SpeculativeDecoder, ShrinksGammaAtContextLimit) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 20);
  ModelDrafter drafter(*pair.target, "self", 20, {false, false, true});
  GenerationRequest req;
  req.prompt = {1, 2, 3, 4, 5};
  req.max_new_tokens = 100;
  req.sampling.temperature = 0;
  SpeculativeConfig cfg;
  cfg.gamma = 8;
  const auto out = generate_speculative(target, drafter, req, cfg);
  EXPECT_EQ(out.stop, StopReason::kContext);
  EXPECT_EQ(req.prompt.size() + out.tokens.size(), 21u);  // the last token never needs feeding
  const auto ref = generate_autoregressive(target, req);
  EXPECT_EQ(ref.tokens, out.tokens);
}

// After any accept pattern, the target cache holds what a fresh run over the committed text
// would: the next-token logits after generation match a fresh forward.
TEST(SpeculativeDecoder, RollbackLeavesConsistentCache) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  LlamaRunner fresh(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  for (uint64_t seed = 0; seed < 6; seed++) {
    GenerationRequest req;
    req.prompt = prompts(vocab)[seed % 8];
    req.max_new_tokens = 17;
    req.sampling.temperature = 1.0f;
    req.seed = seed;
    SpeculativeConfig cfg;
    cfg.gamma = 1 + static_cast<int>(seed % 5);
    const auto out = generate_speculative(target, drafter, req, cfg);
    std::vector<int32_t> all = req.prompt;
    all.insert(all.end(), out.tokens.begin(), out.tokens.end());
    // The target cache holds all committed tokens but possibly the last few (a round ends
    // with the cache at L + n_accepted); bring it to len-1 and compare the final logits.
    ASSERT_LE(target.n_past(), static_cast<int64_t>(all.size()));
    const int64_t have = target.n_past();
    target.truncate(std::min<int64_t>(have, static_cast<int64_t>(all.size()) - 1));
    const int64_t from = target.n_past();
    const float* a = target.forward(all.data() + from, static_cast<int64_t>(all.size()) - from);
    const float* a_last = a + (static_cast<int64_t>(all.size()) - from - 1) * vocab;
    std::vector<float> got(a_last, a_last + vocab);
    fresh.truncate(0);
    const float* b = fresh.forward(all.data(), static_cast<int64_t>(all.size()), true);
    for (int64_t x = 0; x < vocab; x++) ASSERT_NEAR(got[x], b[x], 1e-4f) << "seed " << seed;
  }
}

// The joint distribution of the first two generated tokens equals the target's, computed
// exactly from its probabilities. Chi-square goodness of fit at significance 1e-3 per case.
// With N = 20000 samples over the vocab^2 = 256 cells of a 16-token vocabulary (pooled where
// expected counts are < 5), a planted error of total variation 0.05 concentrated on a few
// cells gives a noncentrality N * sum(d^2/p) far above the ~320 needed for power > 0.99;
// the planted-bug test below shows the test has teeth.
struct JointCase {
  const char* name;
  float temperature;
  int top_k;
  float top_p;
  float draft_temperature;
  int drafter;  // 0 self-skip, 1 other model, 2 prompt lookup, 3 bigram
  int gamma;
};

TEST(SpeculativeDecoder, JointOfFirstTwoTokensIsTargets) {
  const int64_t vocab = 16;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 64);
  auto drafters = all_drafters(pair, vocab);
  const std::vector<int32_t> prompt = {3, 5, 7, 3, 5};
  const JointCase cases[] = {
      {"T=1 self", 1.0f, 0, 1.0f, 1.0f, 0, 3},
      {"T=1 other", 1.0f, 0, 1.0f, 1.0f, 1, 2},
      {"T=0.7 lookup", 0.7f, 0, 1.0f, 0.7f, 2, 4},
      {"T=1 bigram", 1.0f, 0, 1.0f, 1.0f, 3, 2},
      {"T=1.3 top-k 5", 1.3f, 5, 1.0f, 1.3f, 1, 3},
      {"T=1 top-p 0.8", 1.0f, 0, 0.8f, 1.0f, 0, 2},
      {"draft T=0.4 vs 1", 1.0f, 0, 1.0f, 0.4f, 1, 3},
      {"draft greedy vs T=1", 1.0f, 0, 1.0f, 0.0f, 0, 2},
  };
  const int n_samples = 20000;
  for (const auto& c : cases) {
    SamplingParams sp{c.temperature, c.top_k, c.top_p};
    const auto expected = exact_joint(target, prompt, sp, vocab);
    std::vector<int64_t> observed(expected.size(), 0);
    SpeculativeConfig cfg;
    cfg.gamma = c.gamma;
    cfg.draft_sampling = SamplingParams{c.draft_temperature, c.top_k, c.top_p};
    GenerationRequest req;
    req.prompt = prompt;
    // gamma + 1 tokens: the first round may draft the full gamma (k = min(gamma, remaining -
    // 1)); with 2 it would be clamped to 1 whatever the case says.
    req.max_new_tokens = c.gamma + 1;
    req.sampling = sp;
    req.seed = 2024;
    for (int i = 0; i < n_samples; i++) {
      req.request_id = static_cast<uint64_t>(i);
      const auto out = generate_speculative(target, *drafters[c.drafter], req, cfg);
      ASSERT_GE(out.tokens.size(), 2u);
      // The gamma actually used: model and bigram drafters always propose k tokens; prompt
      // lookup proposes what its match gives, at most gamma.
      if (c.drafter != 2) {
        ASSERT_EQ(out.rounds[0].n_draft, c.gamma) << c.name;
      } else {
        ASSERT_LE(out.rounds[0].n_draft, c.gamma) << c.name;
      }
      observed[out.tokens[0] * vocab + out.tokens[1]]++;
    }
    const auto gof = stats_chi2_gof(observed, expected);
    EXPECT_GT(gof.p_value, 1e-3) << c.name << ": chi2 " << gof.statistic << " df " << gof.df;
  }
}

// The joint test has teeth: a drafter that reports a q other than the one it sampled from
// (here: it samples from q but reports the uniform distribution) breaks exactness, and the
// same chi-square test must reject it.
using testing_util::UniformQDrafter;

TEST(SpeculativeDecoder, JointTestRejectsPlantedBug) {
  const int64_t vocab = 16;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 64);
  ModelDrafter other(*pair.other, "other", 64);
  UniformQDrafter bad(other);
  const std::vector<int32_t> prompt = {3, 5, 7, 3, 5};
  SamplingParams sp{1.0f, 0, 1.0f};
  const auto expected = exact_joint(target, prompt, sp, vocab);
  std::vector<int64_t> observed(expected.size(), 0);
  SpeculativeConfig cfg;
  cfg.gamma = 2;
  cfg.draft_sampling = SamplingParams{0.3f, 0, 1.0f};  // sharp q, reported as uniform
  GenerationRequest req;
  req.prompt = prompt;
  req.max_new_tokens = 3;  // gamma + 1: the first round drafts both tokens
  req.sampling = sp;
  for (int i = 0; i < 20000; i++) {
    req.request_id = static_cast<uint64_t>(i);
    const auto out = generate_speculative(target, bad, req, cfg);
    observed[out.tokens[0] * vocab + out.tokens[1]]++;
  }
  EXPECT_LT(stats_chi2_gof(observed, expected).p_value, 1e-6);
}

// Acceptance measured on a long run agrees with the Corollary 3.6 estimate (mean beta over
// tested positions): the accept events are Bernoulli(min(1, p/q)) whose mean given the prefix
// is beta, so accepted/tested must sit within a 99.9% Wilson interval around alpha_beta
// (slightly widened for the dependence between positions of one round).
TEST(SpeculativeDecoder, EmpiricalAcceptanceMatchesCorollary36) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 512);
  ModelDrafter drafter(*pair.target, "self", 512, {false, false, true});
  AcceptanceStats stats;
  for (uint64_t r = 0; r < 40; r++) {
    GenerationRequest req;
    req.prompt = prompts(vocab)[r % 8];
    req.max_new_tokens = 100;
    req.sampling.temperature = 1.0f;
    req.seed = 99;
    req.request_id = r;
    SpeculativeConfig cfg;
    cfg.gamma = 4;
    stats.add(generate_speculative(target, drafter, req, cfg).rounds);
  }
  ASSERT_GT(stats.n_tested, 2000);
  const Interval ci = stats_wilson_interval(stats.n_accepted, stats.n_tested, 1e-3);
  const double slack = 0.01;
  EXPECT_GE(stats.alpha_beta(), ci.lo - slack) << "empirical " << stats.alpha_empirical();
  EXPECT_LE(stats.alpha_beta(), ci.hi + slack) << "empirical " << stats.alpha_empirical();
  // And the paper's expected tokens per round from alpha (Eq. 1) is near the measured tau.
  const double a = stats.alpha_beta();
  const double predicted_tau = (1 - std::pow(a, 5)) / (1 - a);
  EXPECT_NEAR(stats.tau(), predicted_tau, 0.15 * predicted_tau);
}

// Lenience 1 reproduces the exact algorithm bit for bit at the generation level.
TEST(SpeculativeDecoder, LenienceOneIsExact) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  GenerationRequest req;
  req.prompt = prompts(vocab)[3];
  req.max_new_tokens = 40;
  req.sampling.temperature = 0.9f;
  req.seed = 5;
  SpeculativeConfig exact, lenient_one;
  exact.gamma = lenient_one.gamma = 4;
  lenient_one.lenience = 1.0;
  const auto a = generate_speculative(target, drafter, req, exact);
  const auto b = generate_speculative(target, drafter, req, lenient_one);
  EXPECT_EQ(a.tokens, b.tokens);
  // Lower lenience accepts at least as often on the same random draws.
  SpeculativeConfig loose = exact;
  loose.lenience = 0.2;
  AcceptanceStats s_exact, s_loose;
  for (uint64_t r = 0; r < 10; r++) {
    req.request_id = r;
    s_exact.add(generate_speculative(target, drafter, req, exact).rounds);
    s_loose.add(generate_speculative(target, drafter, req, loose).rounds);
  }
  EXPECT_GT(s_loose.alpha_empirical(), s_exact.alpha_empirical());
}

// Adaptive gamma policies still give greedy parity and respect their bounds.
TEST(SpeculativeDecoder, GammaPoliciesKeepParity) {
  const int64_t vocab = 64;
  Pair pair(vocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.target, "self", 256, {false, false, true});
  GenerationRequest req;
  req.prompt = prompts(vocab)[2];
  req.max_new_tokens = 40;
  req.sampling.temperature = 0;
  const auto ref = generate_autoregressive(target, req);
  GammaHfHeuristic heuristic(5);
  GammaEntropyGuided entropy(1, 6, 0.5);
  for (GammaPolicy* policy : std::vector<GammaPolicy*>{&heuristic, &entropy}) {
    SpeculativeConfig cfg;
    cfg.gamma = 8;
    cfg.draft_sampling.temperature = 0;
    cfg.policy = policy;
    const auto out = generate_speculative(target, drafter, req, cfg);
    EXPECT_EQ(out.tokens, ref.tokens);
  }
  SpeculativeConfig pmin;
  pmin.gamma = 8;
  pmin.draft_sampling.temperature = 0;
  pmin.stop_rule.p_min = 0.99f;  // random models are unsure: most rounds draft little
  const auto out = generate_speculative(target, drafter, req, pmin);
  EXPECT_EQ(out.tokens, ref.tokens);
}

}  // namespace
}  // namespace speclab
