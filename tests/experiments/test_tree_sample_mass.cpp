// The acceptance profile's sampled-sibling figures (acceptance_profile.h), which price sampled
// tree levels:
//   sample_mass[b - 1]     = P(one of b siblings drawn from q passes SpecInfer's verification)
//   sample_distinct[b - 1] = expected distinct tokens among b draws from q (a level's nodes).
//   - the formulas against the verifier itself (core/tree_verify.h) and the drafter's own
//     repeat rule, by simulation, with a planted wrong law each test must reject: siblings as
//     independent tries (1 - (1 - beta)^b, what the predictor used before), and a level
//     counted at full width;
//   - measured on the tiny zoo pair: one sibling passes with the pair's beta at every
//     position, more siblings pass at least as often, repeats happen;
//   - the file keeps both lists and refuses bad ones naming the file and the position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/speedup_prediction.h"
#include "core/token_tree.h"
#include "core/tree_verify.h"
#include "experiments/predict/acceptance_profile.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "tests/experiments/acceptance_profile_cases.h"

namespace speclab {
namespace {

// p and q of a 5-token vocabulary where the residual matters: beta_0 = 0.4, the residual after
// a rejection is {2/3, 1/3, 0, 0, 0}, beta_1 = 0.2, so two siblings pass with 1 - 0.6 * 0.8 =
// 0.52 where independent tries would say 1 - 0.6^2 = 0.64.
const std::vector<float> kP = {0.5f, 0.3f, 0.1f, 0.1f, 0.0f};
const std::vector<float> kQ = {0.1f, 0.1f, 0.1f, 0.2f, 0.5f};
constexpr int64_t kVocab = 5;

struct LevelOutcome {
  bool passed = false;
  int nodes = 0;
};

// One level of b siblings as the drafter builds it (models/drafters/model_drafter.cpp: draws
// from q, a repeat gets no node) and as the decoder verifies it. Rows of p: the root's, then
// any law for the leaves (only their bonus draw reads them).
LevelOutcome one_level(int b, bool greedy, uint64_t trial) {
  DraftTree t;
  t.reset(0);
  t.q = kQ;
  const RngKey base{trial, 0, 0, 0, 0};
  std::vector<int32_t> drawn;
  for (int s = 0; s < b; s++) {
    const int32_t tok =
        sampling_draw(kQ.data(), kVocab,
                      rng_uniform(rng_key_at(base, 0, kRngDraftSample, static_cast<uint32_t>(s))));
    if (std::find(drawn.begin(), drawn.end(), tok) != drawn.end()) {
      t.add_repeat(0, tok, 0);
    } else {
      drawn.push_back(tok);
      t.add_child(0, tok, 0);
    }
  }
  std::vector<float> p;
  for (int32_t i = 0; i < t.n_nodes(); i++) p.insert(p.end(), kP.begin(), kP.end());
  const TreeVerifyOutcome o = tree_verify(t, p.data(), kVocab, greedy, base);
  return {!o.path.empty(), t.n_nodes() - 1};
}

TEST(AcceptanceSampleMass, EqualsTheVerifiersPassRateAndRejectsIndependentTries) {
  constexpr int kTrials = 40000;
  for (bool greedy : {false, true}) {
    const std::vector<float> mass = acceptance_sample_mass(kP.data(), kQ.data(), kVocab, 3, greedy);
    ASSERT_EQ(mass.size(), 3u);
    const double beta = greedy ? kQ[0] : 0.4;  // greedy: q at the target's argmax
    EXPECT_NEAR(mass[0], beta, 1e-6);
    for (int b = 1; b <= 3; b++) {
      int passed = 0;
      for (int i = 0; i < kTrials; i++)
        passed += one_level(b, greedy, static_cast<uint64_t>(b * kTrials + i)).passed ? 1 : 0;
      const double freq = static_cast<double>(passed) / kTrials;
      const double m = mass[static_cast<size_t>(b - 1)];
      const double sigma = std::sqrt(m * (1 - m) / kTrials);
      EXPECT_LT(std::abs(freq - m), 4.5 * sigma) << "greedy " << greedy << " b " << b;
      // The planted wrong law: siblings as independent tries of the first one.
      const double independent = 1 - std::pow(1 - beta, b);
      if (!greedy && b > 1) {
        EXPECT_GT(std::abs(freq - independent), 8 * sigma) << "b " << b << ": not rejected";
      }
    }
  }
  EXPECT_NEAR(acceptance_sample_mass(kP.data(), kQ.data(), kVocab, 2, false)[1], 0.52, 1e-6);
  EXPECT_NEAR(acceptance_sample_mass(kP.data(), kQ.data(), kVocab, 2, true)[1], 1 - 0.81, 1e-6);
}

TEST(AcceptanceSampleDistinct, EqualsTheDraftersNodeCountAndRejectsFullWidth) {
  constexpr int kTrials = 40000;
  const std::vector<float> distinct = acceptance_sample_distinct(kQ.data(), kVocab, 4);
  ASSERT_EQ(distinct.size(), 4u);
  EXPECT_NEAR(distinct[0], 1.0, 1e-6);
  for (int b = 1; b <= 4; b++) {
    double sum = 0, sum2 = 0;
    for (int i = 0; i < kTrials; i++) {
      const double n =
          one_level(b, false, static_cast<uint64_t>(7 * kTrials + b * kTrials + i)).nodes;
      sum += n;
      sum2 += n * n;
    }
    const double mean = sum / kTrials;
    const double sd = std::sqrt(std::max(1e-12, sum2 / kTrials - mean * mean) / kTrials);
    const double e = distinct[static_cast<size_t>(b - 1)];
    EXPECT_LT(std::abs(mean - e), 4.5 * sd + 1e-9) << "b " << b;
    // The planted wrong count: every draw a node (full width).
    if (b > 1) {
      EXPECT_GT(std::abs(mean - b), 8 * sd) << "b " << b << ": full width not rejected";
    }
  }
}

AcceptanceProfile measure_sample_mass(float target_temperature) {
  AcceptanceProfileRequest r;
  r.target_sampling.temperature = target_temperature;
  r.draft_sampling.temperature = 1.0f;
  r.sample_branching = 3;
  return testing_util::tiny_zoo_acceptance_profile(r);
}

TEST(AcceptanceSampleMass, OneSiblingPassesWithThePairsBetaAndRepeatsHappen) {
  for (float temperature : {1.0f, 0.0f}) {
    const AcceptanceProfile a = measure_sample_mass(temperature);
    int64_t positions = 0, repeats = 0, wider_helps = 0;
    for (const auto& p : a.prompts)
      for (const auto& r : p.positions) {
        ASSERT_EQ(r.sample_mass.size(), 3u);
        ASSERT_EQ(r.sample_distinct.size(), 3u);
        EXPECT_NEAR(r.sample_mass[0], r.beta, 1e-5) << p.prompt_id;
        EXPECT_LE(r.sample_mass[0], r.sample_mass[1]);
        EXPECT_LE(r.sample_mass[1], r.sample_mass[2]);
        EXPECT_LE(r.sample_mass[2], 1.0f);
        EXPECT_NEAR(r.sample_distinct[0], 1.0f, 1e-4);
        for (size_t b = 0; b < 3; b++) EXPECT_LE(r.sample_distinct[b], b + 1 + 1e-4);
        repeats += r.sample_distinct[2] < 2.99f ? 1 : 0;
        wider_helps += r.sample_mass[2] > r.sample_mass[0] + 1e-3f ? 1 : 0;
        positions++;
      }
    EXPECT_EQ(positions, 90);
    EXPECT_GT(repeats, 0) << "no position where draws repeat: the node count tests nothing";
    EXPECT_GT(wider_helps, 0);
  }
}

TEST(AcceptanceSampleMass, TheFileKeepsBothListsAndRefusesBadOnes) {
  const AcceptanceProfile a = measure_sample_mass(1.0f);
  const nlohmann::json j = acceptance_profile_to_json(a);
  ASSERT_TRUE(j["prompts"][0].contains("sample_mass"));
  ASSERT_TRUE(j["prompts"][0].contains("sample_distinct"));
  EXPECT_FALSE(j["prompts"][0].contains("top_mass"));
  const AcceptanceProfile back = acceptance_profile_from_json(j, "f.json");
  for (size_t i = 0; i < a.prompts.size(); i++)
    for (size_t t = 0; t < a.prompts[i].positions.size(); t++) {
      EXPECT_EQ(back.prompts[i].positions[t].sample_mass, a.prompts[i].positions[t].sample_mass);
      EXPECT_EQ(back.prompts[i].positions[t].sample_distinct,
                a.prompts[i].positions[t].sample_distinct);
    }

  const auto refused = testing_util::expect_acceptance_file_refused;
  nlohmann::json decreasing = j;
  decreasing["prompts"][0]["sample_mass"][2] = {0.5, 0.4, 0.6};
  refused(decreasing,
          "f.json: prompts[0]: position 2: sample_mass: expected a non-decreasing list");
  nlohmann::json alone = j;
  alone["prompts"][1].erase("sample_distinct");
  refused(alone, "f.json: prompts[1]: sample_mass and sample_distinct: expected both or neither");
  nlohmann::json short_list = j;
  short_list["prompts"][0]["sample_distinct"].erase(0);
  refused(short_list,
          "f.json: prompts[0]: sample_distinct: expected a list of one list per position");
  nlohmann::json too_many = j;
  too_many["prompts"][0]["sample_distinct"][1] = {1.0, 2.5, 2.5};
  refused(too_many,
          "f.json: prompts[0]: position 1: sample_distinct[1]: expected a number in [1, 2]");
  nlohmann::json mismatched = j;
  mismatched["prompts"][0]["sample_distinct"][1] = {1.0, 1.5};
  refused(mismatched,
          "f.json: prompts[0]: position 1: sample_distinct: expected as many entries "
          "as sample_mass (3)");
}

}  // namespace
}  // namespace speclab
