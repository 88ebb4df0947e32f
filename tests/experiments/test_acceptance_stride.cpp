// measure.acceptance_stride: an acceptance profile with a rollout at every N-th position only
// (systematic sampling of each prompt's text). Stride 1 is the full profile call for call;
// stride N makes about 1/N of the target passes, its rollouts are the full profile's at the
// positions it measures, and its survival stays near the full one; the predicted speedup's
// prompt-cluster bootstrap interval covers the truth on synthetic profiles; a strided
// profile file reads back strided and a file of old format reads as stride 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/speedup_prediction.h"
#include "experiments/predict/acceptance_profile.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"

namespace speclab {
namespace {

const std::string kZoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";

// Forwards to a runner and counts the target passes and the tokens they read.
class CountingRunner : public TokenRunner {
 public:
  explicit CountingRunner(TokenRunner& inner) : inner_(inner) {}
  const float* forward(const int32_t* tokens, int64_t n_tokens, bool last_only) override {
    calls++;
    tokens_read += n_tokens;
    return inner_.forward(tokens, n_tokens, last_only);
  }
  void truncate(int64_t n) override { inner_.truncate(n); }
  int64_t n_past() const override { return inner_.n_past(); }
  int64_t max_ctx() const override { return inner_.max_ctx(); }
  int64_t vocab() const override { return inner_.vocab(); }
  int64_t calls = 0, tokens_read = 0;

 private:
  TokenRunner& inner_;
};

struct Measured {
  AcceptanceProfile profile;
  int64_t calls = 0;
};

Measured measure(int stride, float temperature) {
  const auto target = llama_load(kZoo + "tiny-target-5m");
  LlamaRunner runner(*target, 128);
  CountingRunner counting(runner);
  auto drafter = drafter_create(kZoo + "tiny-draft-0.5m", *target, 128);
  std::vector<PromptTokens> prompts;
  for (int i = 0; i < 3; i++)
    prompts.push_back({"p" + std::to_string(i), {1, 17 + i, 40 + 3 * i, 9, 33}, ""});
  AcceptanceProfileRequest r;
  r.target_sampling.temperature = temperature;
  r.draft_sampling.temperature = temperature;
  r.depth = 4;
  r.max_new_tokens = 40;
  r.seed = 7;
  r.stride = stride;
  Measured m;
  m.profile = acceptance_profile_measure(counting, *drafter, prompts, r);
  m.calls = counting.calls;
  return m;
}

TEST(AcceptanceStride, StrideOneRollsOutEveryPositionInOnePassEach) {
  const Measured full = measure(1, 1.0f);
  EXPECT_EQ(full.profile.stride, 1);
  int64_t positions = 0;
  for (const auto& p : full.profile.prompts) {
    EXPECT_EQ(p.n_tokens, -1);  // the full profile's layout, as before strides
    EXPECT_EQ(p.stride, 1);
    EXPECT_EQ(p.offset, 0);
    EXPECT_EQ(p.positions.size(), 40u);
    positions += static_cast<int64_t>(p.positions.size());
  }
  // Per prompt: its text and the prompt read again before the rollouts (42 passes, as before
  // strides), then one pass per rollout.
  EXPECT_EQ(full.calls, 3 * 42 + positions);
  // The file keeps its old form: no stride, no per-prompt layout.
  const nlohmann::json j = acceptance_profile_to_json(full.profile);
  EXPECT_FALSE(j.contains("stride"));
  EXPECT_FALSE(j["prompts"][0].contains("n_tokens"));
}

TEST(AcceptanceStride, StrideFourMeasuresAQuarterOfThePositionsAndTheSameRollouts) {
  const Measured full = measure(1, 1.0f);
  const Measured strided = measure(4, 1.0f);
  EXPECT_EQ(strided.profile.stride, 4);
  int64_t positions = 0;
  for (size_t i = 0; i < strided.profile.prompts.size(); i++) {
    const AcceptancePrompt& p = strided.profile.prompts[i];
    const AcceptancePrompt& f = full.profile.prompts[i];
    EXPECT_EQ(p.n_tokens, 40);
    EXPECT_EQ(p.stride, 4);
    EXPECT_GE(p.offset, 0);
    EXPECT_LT(p.offset, 4);
    EXPECT_EQ(static_cast<int64_t>(p.positions.size()), (40 - p.offset + 3) / 4);
    positions += static_cast<int64_t>(p.positions.size());
    // The rollout at t = offset + 4k is the full profile's at t: same draws (keys depend on t
    // only), the skipped tokens read in the same pass (floats summed in another order).
    for (size_t k = 0; k < p.positions.size(); k++) {
      const AcceptanceRollout& a = p.positions[k];
      const AcceptanceRollout& b = f.positions[static_cast<size_t>(p.offset) + 4 * k];
      ASSERT_EQ(a.accept.size(), b.accept.size());
      for (size_t j = 0; j < a.accept.size(); j++) EXPECT_NEAR(a.accept[j], b.accept[j], 1e-3);
      EXPECT_NEAR(a.beta, b.beta, 1e-3);
    }
    // A walk visiting t draws one of the measured rollouts, the same one for the same key.
    const RngKey key{1, i, 9, kRngProfileStride, 0};
    const AcceptanceRollout* drawn = &acceptance_rollout_for(p, 9, key);
    EXPECT_GE(drawn, p.positions.data());
    EXPECT_LT(drawn, p.positions.data() + p.positions.size());
    EXPECT_EQ(drawn, &acceptance_rollout_for(p, 9, key));
  }
  EXPECT_EQ(positions, 30);  // 120 positions / 4
  // Target passes: the texts and prompts (3 x 42, as at stride 1) plus one per measured
  // position: 30 rollout passes instead of 120.
  EXPECT_EQ(strided.calls, 3 * 42 + positions);
  EXPECT_EQ(full.calls - 3 * 42, 120);

  // The summaries average the measured positions: within 0.1 of the full profile's survival
  // at every depth on this fixed case (30 of 120 positions, systematic sample).
  const AcceptanceSummary a = acceptance_summarize(full.profile);
  const AcceptanceSummary b = acceptance_summarize(strided.profile);
  EXPECT_EQ(b.n_positions, 30);
  ASSERT_EQ(a.survival.size(), b.survival.size());
  for (size_t i = 0; i < a.survival.size(); i++)
    EXPECT_NEAR(a.survival[i], b.survival[i], 0.1) << "depth " << i + 1;
  EXPECT_NEAR(a.alpha_beta, b.alpha_beta, 0.1);
}

TEST(AcceptanceStride, AStridedProfileFileReadsBackStridedAndAnOldOneAsStrideOne) {
  const Measured strided = measure(3, 0.0f);
  const nlohmann::json j = acceptance_profile_to_json(strided.profile);
  EXPECT_EQ(j["stride"], 3);
  const AcceptanceProfile back = acceptance_profile_from_json(j, "f.json");
  EXPECT_EQ(back.stride, 3);
  ASSERT_EQ(back.prompts.size(), strided.profile.prompts.size());
  for (size_t i = 0; i < back.prompts.size(); i++) {
    EXPECT_EQ(back.prompts[i].n_tokens, strided.profile.prompts[i].n_tokens);
    EXPECT_EQ(back.prompts[i].offset, strided.profile.prompts[i].offset);
    EXPECT_EQ(back.prompts[i].positions.size(), strided.profile.prompts[i].positions.size());
  }
  // A rollout missing for the layout the prompt states: refused, naming the file.
  nlohmann::json bad = j;
  bad["prompts"][0]["n_tokens"] = 400;
  try {
    acceptance_profile_from_json(bad, "f.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f.json: prompts[0]"), std::string::npos) << e.what();
  }
  nlohmann::json old = j;
  old.erase("stride");
  EXPECT_EQ(acceptance_profile_from_json(old, "f.json").stride, 1);
}

CostProfile flat_cost() {
  CostProfile c;
  c.target_s.assign(9, 1.0);
  c.draft_round_s = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  c.host_round_s.assign(9, 0.0);
  c.draft_step_s = 0.1;
  return c;
}

TEST(AcceptanceStride, TheIntervalOfAConfiguredProfileIsItsPoint) {
  // Every prompt alike: no prompt-to-prompt variation, the interval is the prediction.
  const AcceptanceProfile p = acceptance_profile_configured({0.7}, 4, 10, 64);
  ChainSetting s;
  s.gamma = 4;
  const Prediction pred = predict_chain(flat_cost(), p, s);
  const PredictionInterval ci = predict_chain_interval(flat_cost(), p, s, 200, 0.95, 1);
  EXPECT_NEAR(ci.speedup_lo, pred.speedup, 1e-9);
  EXPECT_NEAR(ci.speedup_hi, pred.speedup, 1e-9);
  EXPECT_NEAR(ci.tokens_per_round_lo, pred.tokens_per_round, 1e-9);
  EXPECT_NEAR(ci.tokens_per_round_hi, pred.tokens_per_round, 1e-9);
  // One prompt: nothing to resample.
  const PredictionInterval one = predict_chain_interval(
      flat_cost(), acceptance_profile_configured({0.7}, 4, 1, 64), s, 200, 0.95, 1);
  EXPECT_TRUE(std::isnan(one.speedup_lo));
}

// A prompt whose positions accept with their own probabilities: alpha_p ~ U(0.4, 0.9) per
// prompt, each position's r_j drawn around it, so prompts differ as real ones do.
AcceptancePrompt synthetic_prompt(uint64_t seed, uint64_t index, int64_t n, int depth) {
  const double alpha = 0.4 + 0.5 * rng_uniform({seed, index, 0, kRngTest, 0});
  AcceptancePrompt p;
  p.prompt_id = "s" + std::to_string(index);
  for (int64_t t = 0; t < n; t++) {
    AcceptanceRollout r;
    for (int j = 0; j < depth; j++) {
      const double u = rng_uniform(
          {seed, index, static_cast<uint64_t>(t), kRngTest, static_cast<uint32_t>(j + 1)});
      r.accept.push_back(static_cast<float>(std::clamp(alpha + 0.4 * (u - 0.5), 0.01, 1.0)));
      r.top_prob.push_back(1.0f);
      r.entropy.push_back(0.0f);
    }
    r.beta = r.accept[0];
    p.positions.push_back(std::move(r));
  }
  return p;
}

// Keeps the positions t = offset + k stride, as a strided measurement would.
AcceptancePrompt stride_of(const AcceptancePrompt& full, int stride, int64_t offset) {
  AcceptancePrompt p;
  p.prompt_id = full.prompt_id;
  p.n_tokens = static_cast<int64_t>(full.positions.size());
  p.stride = stride;
  p.offset = offset;
  for (size_t t = static_cast<size_t>(offset); t < full.positions.size();
       t += static_cast<size_t>(stride))
    p.positions.push_back(full.positions[t]);
  return p;
}

// The walk over a strided prompt takes the mixture of its rollouts at every position. Copying
// the nearest rollout instead lets a walk meet the same rejecting rollout round after round
// and biases tokens per round low (18% at gamma 8 on the tiny zoo); the mixture stays within
// 2% of the full profile here, for the exact recursion and the Monte Carlo walks alike.
TEST(AcceptanceStride, AStridedPromptPredictsWhatTheFullOneDoes) {
  AcceptanceProfile full, strided;
  full.max_depth = strided.max_depth = 8;
  strided.stride = 4;
  for (uint64_t i = 0; i < 16; i++) {
    full.prompts.push_back(synthetic_prompt(3, i, 48, 8));
    strided.prompts.push_back(stride_of(full.prompts.back(), 4, static_cast<int64_t>(i % 4)));
  }
  for (const char* policy : {"fixed", "heuristic"}) {
    ChainSetting s;
    s.gamma = 8;
    s.policy = policy;
    s.max_new_tokens = 48;
    s.monte_carlo_walks = 400;
    const Prediction a = predict_chain(flat_cost(), full, s);
    const Prediction b = predict_chain(flat_cost(), strided, s);
    EXPECT_NEAR(b.tokens_per_round / a.tokens_per_round, 1.0, 0.02) << policy;
    EXPECT_NEAR(b.speedup / a.speedup, 1.0, 0.02) << policy;
  }
}

TEST(AcceptanceStride, TheIntervalCoversThePopulationSpeedupAtAboutItsLevel) {
  // The truth: the prediction pooled over 2000 prompts. 100 experiments of 24 prompts each,
  // profiled at stride 4; the 95% interval should cover the truth in about 95 of them (the
  // percentile bootstrap undercovers a little at 24 clusters: at least 85 asked).
  const int depth = 4;
  ChainSetting s;
  s.gamma = 4;
  s.max_new_tokens = 64;
  AcceptanceProfile population;
  population.max_depth = depth;
  for (uint64_t i = 0; i < 2000; i++)
    population.prompts.push_back(synthetic_prompt(5, i, 64, depth));
  const Prediction truth = predict_chain(flat_cost(), population, s);
  int covered_speedup = 0, covered_tau = 0;
  for (uint64_t e = 0; e < 100; e++) {
    AcceptanceProfile sample;
    sample.max_depth = depth;
    sample.stride = 4;
    for (uint64_t i = 0; i < 24; i++) {
      const AcceptancePrompt full = synthetic_prompt(6 + e, i, 64, depth);
      sample.prompts.push_back(stride_of(full, 4, static_cast<int64_t>(i % 4)));
    }
    const PredictionInterval ci = predict_chain_interval(flat_cost(), sample, s, 400, 0.95, e);
    covered_speedup += ci.speedup_lo <= truth.speedup && truth.speedup <= ci.speedup_hi;
    covered_tau += ci.tokens_per_round_lo <= truth.tokens_per_round &&
                   truth.tokens_per_round <= ci.tokens_per_round_hi;
  }
  EXPECT_GE(covered_speedup, 85);
  EXPECT_GE(covered_tau, 85);
}

}  // namespace
}  // namespace speclab
