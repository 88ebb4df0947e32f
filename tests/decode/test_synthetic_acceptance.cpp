// Synthetic acceptance (SpeculativeConfig::synthetic_accept): real draft and target
// calls, but each draft accepted with a configured per-position probability.
//
// Statistics: a tested position draws u from its own Philox key (seed, request, position,
// kRngSynthAccept) that no earlier draw used, and whether a position is tested depends
// only on earlier draws. So, given the number of tests, the accept count at a position is
// Binomial(tests, a): each check below is a two-sided Wilson score interval at significance
// 1e-3 (a 99.9% interval) around the measured frequency, which must contain the configured a.
// With 3,300 to 3,900 tests per scalar case the intervals are about +-0.02 to +-0.025 wide
// (+-0.02 to +-0.055 per position with 590 to 1,670 tests). The runs are seeded, so a pass
// is reproducible; the twelve checks at 1e-3 each have a family-wise level of about 1.2%.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "core/stats.h"
#include "core/threads.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/llama_runner.h"
#include "tests/decode/decode_test_models.h"

namespace speclab {
namespace {

class OneThread : public ::testing::Environment {
 public:
  void SetUp() override { threads_set(1); }
};
const auto* const one_thread_env = ::testing::AddGlobalTestEnvironment(new OneThread);

constexpr double kSignificance = 1e-3;

// Target and two model drafters: the target minus its last layer (high natural acceptance)
// and an unrelated random model (low natural acceptance).
struct Models {
  static constexpr int64_t kVocab = 64;
  decode_test::Pair pair{kVocab};  // the target and an unrelated model (seeds 11, 12)
  LlamaRunner target{*pair.target, 256};
  ModelDrafter self{*pair.target, "self:skip=2", 256, std::vector<bool>{false, false, true}};
  ModelDrafter other{*pair.other, "other", 256};
};

GenerationRequest request(uint64_t id, float temperature, int64_t max_new_tokens = 100,
                          uint64_t seed = 77) {
  GenerationRequest req;
  for (int j = 0; j < 4 + static_cast<int>(id % 5); j++)
    req.prompt.push_back(static_cast<int32_t>((id * 37 + j * 11 + 1) % Models::kVocab));
  req.max_new_tokens = max_new_tokens;
  req.sampling.temperature = temperature;
  req.seed = seed;
  req.request_id = id;
  return req;
}

void expect_within_wilson(int64_t accepted, int64_t tested, double configured,
                          const std::string& what) {
  const Interval ci = stats_wilson_interval(accepted, tested, kSignificance);
  EXPECT_GE(configured, ci.lo) << what << ": " << accepted << "/" << tested;
  EXPECT_LE(configured, ci.hi) << what << ": " << accepted << "/" << tested;
}

// accepted/tested over many rounds matches a scalar configured probability, at a target
// temperature of 1 and 0 and with a drafter whose natural acceptance is far from it.
TEST(SyntheticAcceptance, EmpiricalFrequencyMatchesConfiguredProbability) {
  Models s;
  for (const double a : {0.3, 0.7, 0.9}) {
    for (const float temperature : {1.0f, 0.0f}) {
      SpeculativeConfig cfg;
      cfg.gamma = 4;
      cfg.draft_sampling.temperature = temperature;
      cfg.synthetic_accept = {a};
      AcceptanceStats stats;
      // The accept draws depend on the seed, not on the temperature: another seed per
      // temperature keeps the two samples independent.
      const uint64_t seed = temperature == 0.0f ? 78 : 77;
      for (uint64_t r = 0; r < 40; r++)
        stats.add(generate_speculative(s.target, s.other, request(r, temperature, 100, seed), cfg)
                      .rounds);
      ASSERT_GT(stats.n_tested, 1500);
      expect_within_wilson(stats.n_accepted, stats.n_tested, a,
                           "a = " + std::to_string(a) + " T = " + std::to_string(temperature));
      // The pair's natural acceptance is still recorded, and it is not the configured one.
      EXPECT_GT(std::abs(stats.alpha_beta() - a), 0.1) << "beta " << stats.alpha_beta();
    }
  }
}

// A per-position list: position i is accepted (given it is reached) with probability a_i,
// the last value repeating for later positions; full rounds give Eq. (1)'s refinement.
TEST(SyntheticAcceptance, PerPositionProbabilitiesAreHonoured) {
  Models s;
  const std::vector<double> a = {0.95, 0.6, 0.8};  // positions 3 and 4 use 0.8
  SpeculativeConfig cfg;
  cfg.gamma = 5;
  cfg.synthetic_accept = a;
  AcceptanceStats stats;
  std::vector<double> full_round_tokens;  // n_accepted + 1 of rounds that drafted all 5
  for (uint64_t r = 0; r < 60; r++) {
    const auto out = generate_speculative(s.target, s.self, request(r, 1.0f), cfg);
    stats.add(out.rounds);
    for (const auto& round : out.rounds)
      if (round.n_draft == 5) full_round_tokens.push_back(round.n_accepted + 1);
  }
  ASSERT_EQ(stats.tested_at.size(), 5u);
  for (size_t i = 0; i < 5; i++) {
    ASSERT_GT(stats.tested_at[i], 400) << "position " << i;
    expect_within_wilson(stats.accepted_at[i], stats.tested_at[i],
                         verify_synthetic_prob_at(a, static_cast<int>(i)),
                         "position " + std::to_string(i));
  }
  // Tokens per full round: mean within a 99.9% normal interval of 1 + sum_i prod_{j<=i} a_j.
  const std::vector<double> a5 = {0.95, 0.6, 0.8, 0.8, 0.8};
  const double expected = 1 + verify_expected_accepted(a5);
  const Interval ci = stats_mean_interval(full_round_tokens, kSignificance);
  EXPECT_GE(expected, ci.lo);
  EXPECT_LE(expected, ci.hi);
}

// The accept decisions ignore p and q: with the same seed, two drafters of very different
// quality give the same accept pattern (positions advance by n_accepted + 1 either way).
// The same seed reproduces a run exactly; another seed changes the pattern.
TEST(SyntheticAcceptance, ReproducibleAndIndependentOfTheModels) {
  Models s;
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.synthetic_accept = {0.6};
  auto pattern = [](const GenerationResult& g) {
    std::vector<int> v;
    for (const auto& r : g.rounds) v.push_back(r.n_accepted);
    return v;
  };
  const GenerationRequest req = request(3, 1.0f, 60);
  const auto a = generate_speculative(s.target, s.self, req, cfg);
  const auto b = generate_speculative(s.target, s.self, req, cfg);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(pattern(a), pattern(b));
  const auto c = generate_speculative(s.target, s.other, req, cfg);
  EXPECT_EQ(pattern(a), pattern(c));
  threads_set(2);  // thread count does not enter the keys (nor the sums: tested elsewhere)
  const auto d = generate_speculative(s.target, s.self, req, cfg);
  threads_set(1);
  EXPECT_EQ(a.tokens, d.tokens);
  GenerationRequest other_seed = req;
  other_seed.seed = 78;
  EXPECT_NE(pattern(a), pattern(generate_speculative(s.target, s.self, other_seed, cfg)));
}

// Probability 1 accepts every draft and takes the bonus; at temperature 0 a synthetic
// rejection emits the target's argmax given the committed prefix (the text stays the
// target's choice after each rejection, though accepted drafts are the draft's).
TEST(SyntheticAcceptance, CertainAcceptanceAndGreedyCorrections) {
  Models s;
  SpeculativeConfig all;
  all.gamma = 3;
  all.synthetic_accept = {1.0};
  for (const auto& r : generate_speculative(s.target, s.other, request(1, 1.0f), all).rounds) {
    EXPECT_EQ(r.n_accepted, r.n_draft);
    EXPECT_TRUE(r.bonus);
  }

  SpeculativeConfig half;
  half.gamma = 3;
  half.draft_sampling.temperature = 0;
  half.synthetic_accept = {0.5};
  const GenerationRequest req = request(2, 0.0f, 30);
  const auto out = generate_speculative(s.target, s.other, req, half);
  LlamaRunner fresh(*s.pair.target, 256);
  std::vector<int32_t> context = req.prompt;
  size_t emitted = 0;
  int corrections = 0;
  for (const auto& r : out.rounds) {
    std::vector<int32_t> prefix = context;
    prefix.insert(prefix.end(), out.tokens.begin() + emitted,
                  out.tokens.begin() + emitted + r.n_accepted);
    for (int i = 0; i < r.n_accepted; i++)
      EXPECT_EQ(out.tokens[emitted + i], r.drafted[i]);  // accepted drafts are committed as is
    if (r.n_emitted > r.n_accepted) {
      fresh.truncate(0);
      const float* logits = fresh.forward(prefix.data(), static_cast<int64_t>(prefix.size()), true);
      EXPECT_EQ(r.next_token, sampling_argmax(logits, Models::kVocab));
      corrections++;
    }
    context.insert(context.end(), out.tokens.begin() + emitted,
                   out.tokens.begin() + emitted + r.n_emitted);
    emitted += static_cast<size_t>(r.n_emitted);
  }
  EXPECT_EQ(emitted, out.tokens.size());
  EXPECT_GT(corrections, 5);
}

TEST(SyntheticAcceptance, ProbabilitiesOutsideZeroOneAreRefused) {
  Models s;
  for (const std::vector<double>& bad :
       {std::vector<double>{0.0}, std::vector<double>{1.5}, std::vector<double>{0.5, -0.1}}) {
    SpeculativeConfig cfg;
    cfg.synthetic_accept = bad;
    EXPECT_THROW(generate_speculative(s.target, s.self, request(0, 1.0f, 8), cfg), InputError);
  }
  VerifyRound round;
  std::vector<float> p(2 * Models::kVocab, 1.0f / Models::kVocab);
  const int32_t d = 5;
  round.n_draft = 1;
  round.draft = &d;
  round.p = p.data();
  round.vocab = Models::kVocab;
  EXPECT_THROW(speculative_verify_synthetic(round, {}, false, RngKey{}), InputError);
  EXPECT_THROW(speculative_verify_synthetic(round, {2.0}, false, RngKey{}), InputError);
  EXPECT_EQ(speculative_verify_synthetic(round, {1.0}, false, RngKey{}).n_accepted, 1);
}

}  // namespace
}  // namespace speclab
