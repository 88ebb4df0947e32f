// Lenience (Leviathan et al. 2023, appendix A.5) end to end through the chain decoder.
//
// Greedy: the rule "accept d when p(d) >= l max p" reads the target's distribution BEFORE
// standardization (softmax of the raw logits at temperature 1): at temperature 0 the
// standardized p is one-hot and the rule would never accept anything but the argmax. The
// hand-made target below puts 0.4 on (b + 1) mod 4 and 0.3 on (b + 2) mod 4 after every
// context (a, b); the deterministic drafter always proposes (b + 2) mod 4, never the argmax.
// So at temperature 0: l = 1 and l = 0.8 (0.3 < 0.32) reject every draft, tau = 1 exactly;
// l = 0.5 (0.3 >= 0.2) accepts every draft, tau = gamma + 1 exactly.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "core/speculative_verify.h"
#include "core/stats.h"
#include "models/decode/autoregressive.h"
#include "models/decode/round_stats.h"
#include "models/decode/speculative_decoder.h"
#include "tests/decode/markov_test_models.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace {

using decode_test::MarkovDrafter;
using decode_test::MarkovRunner;

MarkovPair second_best_pair() {
  const int64_t V = 4;
  MarkovPair m;
  m.vocab = V;
  m.a0 = 1;
  m.b0 = 2;
  m.p.assign(V * V * V, 0.15f);
  m.q.assign(V * V, 0.1f);
  for (int64_t a = 0; a < V; a++)
    for (int64_t b = 0; b < V; b++) {
      m.p[(a * V + b) * V + (b + 1) % V] = 0.4f;
      m.p[(a * V + b) * V + (b + 2) % V] = 0.3f;
    }
  for (int64_t b = 0; b < V; b++) {
    m.q[b * V + (b + 2) % V] = 0.7f;
  }
  return m;
}

// The prompt [0, a0, b0]: the first token is the context (a0, b0).
std::vector<int32_t> prompt_of(const MarkovPair& m) { return std::vector<int32_t>{0, m.a0, m.b0}; }

AcceptanceStats run(double lenience, float temperature, std::vector<int32_t>* tokens) {
  const MarkovPair m = second_best_pair();
  MarkovRunner target(m, 256);
  MarkovDrafter drafter(m, /*deterministic=*/true);
  GenerationRequest req;
  req.prompt = prompt_of(m);
  req.max_new_tokens = 40;
  req.sampling.temperature = temperature;
  SpeculativeConfig cfg;
  cfg.gamma = 4;
  cfg.lenience = lenience;
  AcceptanceStats stats;
  const GenerationResult out = generate_speculative(target, drafter, req, cfg);
  stats.add(out.rounds);
  if (tokens) *tokens = out.tokens;
  return stats;
}

TEST(LenienceDecoder, GreedyLenienceUsesRawDistribution) {
  std::vector<int32_t> strict_tokens, lenient_tokens;
  const AcceptanceStats strict = run(1.0, 0.0f, &strict_tokens);
  const AcceptanceStats tight = run(0.8, 0.0f, nullptr);
  const AcceptanceStats lenient = run(0.5, 0.0f, &lenient_tokens);
  EXPECT_EQ(strict.tau(), 1.0);
  EXPECT_EQ(tight.tau(), 1.0);
  EXPECT_EQ(lenient.tau(), 5.0);  // gamma + 1: every draft accepted (40 tokens, 8 rounds)
  EXPECT_GT(lenient.tau(), strict.tau());
  // l = 1 is the strict algorithm: the greedy text of the target alone.
  const MarkovPair m = second_best_pair();
  MarkovRunner target(m, 256);
  GenerationRequest req;
  req.prompt = prompt_of(m);
  req.max_new_tokens = 40;
  req.sampling.temperature = 0.0f;
  EXPECT_EQ(strict_tokens, generate_autoregressive(target, req).tokens);
  // Lenience is lossy: the lenient text follows the drafts ((b + 2) mod 4 after b).
  int32_t b = m.b0;
  for (size_t i = 0; i < lenient_tokens.size(); i++) {
    if (i % 5 == 4) {  // the bonus of each round: the target's argmax
      EXPECT_EQ(lenient_tokens[i], (b + 1) % 4) << i;
    } else {
      EXPECT_EQ(lenient_tokens[i], (b + 2) % 4) << i;
    }
    b = lenient_tokens[i];
  }
}

// Sampling mode on the same pair: lenience raises acceptance from alpha = sum min(p, q) to
// alpha_l = sum min(q, p / l) (verify_expected_acceptance), measured through the decoder.
TEST(LenienceDecoder, SamplingAcceptanceFollowsAlphaL) {
  const MarkovPair m = second_best_pair();
  for (double l : {1.0, 0.5}) {
    MarkovRunner target(m, 256);
    MarkovDrafter drafter(m, /*deterministic=*/false);
    AcceptanceStats stats;
    for (uint64_t r = 0; r < 200; r++) {
      GenerationRequest req;
      req.prompt = prompt_of(m);
      req.max_new_tokens = 50;
      req.seed = 17;
      req.request_id = r;
      SpeculativeConfig cfg;
      cfg.gamma = 3;
      cfg.lenience = l;
      stats.add(generate_speculative(target, drafter, req, cfg).rounds);
    }
    // Every context has the same p and q up to a relabeling, so alpha_l is one number.
    const double alpha_l = verify_expected_acceptance(m.p_row(0, 0), m.q_row(0), 4, l);
    const Interval ci = stats_wilson_interval(stats.n_accepted, stats.n_tested, 1e-4);
    std::printf("l = %.1f: accepted %lld of %lld tested (%.4f), alpha_l %.4f\n", l,
                static_cast<long long>(stats.n_accepted), static_cast<long long>(stats.n_tested),
                stats.alpha_empirical(), alpha_l);
    EXPECT_TRUE(ci.contains(alpha_l)) << "l = " << l;
  }
}

}  // namespace
}  // namespace speclab
