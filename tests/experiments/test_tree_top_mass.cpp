// The acceptance profile's top-b mass (acceptance_profile.h), which prices top-k tree levels:
// top_mass[b - 1] = P(one of the drafter's b likeliest proposals at the text's prefix passes).
//   - the formula on hand-made rows: greedy, 1 once the target's argmax is among the first b;
//     sampling, the target's mass on them; fewer siblings than b repeat the last value;
//   - measured on the tiny zoo pair at T = 0, top_mass[0] is the chain rollout's first
//     acceptance at every position (one top-1 sibling is the greedy chain's first draft), and
//     at T = 1 it is p_t of the drafter's argmax; both non-decreasing in b;
//   - the file keeps it, and a file whose top_mass is not one non-decreasing list per position
//     is refused naming the file and the position; the file keeps a lenient profile's
//     lenient_tv too, and leaves both optional lists out when they are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/speedup_prediction.h"
#include "experiments/predict/acceptance_profile.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "tests/experiments/acceptance_profile_cases.h"

namespace speclab {
namespace {

TEST(AcceptanceTopMass, GreedyCountsTheArgmaxSamplingSumsTheSiblingsMass) {
  const std::vector<float> p = {0.1f, 0.5f, 0.3f, 0.1f};  // argmax 1
  // Siblings in the order tried: 2, 1, 3.
  const std::vector<float> greedy = acceptance_top_mass(p.data(), 4, {2, 1, 3}, 3, true);
  EXPECT_EQ(greedy, (std::vector<float>{0.0f, 1.0f, 1.0f}));
  const std::vector<float> sampled = acceptance_top_mass(p.data(), 4, {2, 1, 3}, 3, false);
  ASSERT_EQ(sampled.size(), 3u);
  EXPECT_FLOAT_EQ(sampled[0], 0.3f);
  EXPECT_FLOAT_EQ(sampled[1], 0.8f);
  EXPECT_FLOAT_EQ(sampled[2], 0.9f);
  // A drafter that offers one sibling (prompt lookup's chain): wider levels pass no more often.
  EXPECT_EQ(acceptance_top_mass(p.data(), 4, {1}, 3, true), (std::vector<float>{1, 1, 1}));
  const std::vector<float> one = acceptance_top_mass(p.data(), 4, {2}, 2, false);
  EXPECT_FLOAT_EQ(one[0], 0.3f);
  EXPECT_FLOAT_EQ(one[1], 0.3f);
}

AcceptanceProfile measure_top_mass(float temperature) {
  AcceptanceProfileRequest r;
  r.target_sampling.temperature = temperature;
  r.draft_sampling.temperature = temperature;
  r.top_branching = 3;
  return testing_util::tiny_zoo_acceptance_profile(r);
}

TEST(AcceptanceTopMass, TopOneIsTheGreedyChainsFirstAcceptanceAndWiderLevelsPassMoreOften) {
  const AcceptanceProfile greedy = measure_top_mass(0.0f);
  int64_t positions = 0, wider_helps = 0;
  for (const auto& p : greedy.prompts)
    for (const auto& r : p.positions) {
      ASSERT_EQ(r.top_mass.size(), 3u);
      ASSERT_FALSE(r.accept.empty());
      EXPECT_EQ(r.top_mass[0], r.accept[0]) << p.prompt_id;
      EXPECT_LE(r.top_mass[0], r.top_mass[1]);
      EXPECT_LE(r.top_mass[1], r.top_mass[2]);
      for (float m : r.top_mass) EXPECT_TRUE(m == 0.0f || m == 1.0f) << "greedy mass is 0 or 1";
      wider_helps += r.top_mass[2] > r.top_mass[0] ? 1 : 0;
      positions++;
    }
  EXPECT_EQ(positions, 90);
  // The case is one where a wider level passes where the chain fails (else it tests nothing
  // a chain would not).
  EXPECT_GT(wider_helps, 0);

  const AcceptanceProfile sampled = measure_top_mass(1.0f);
  int64_t fractional = 0;
  for (const auto& p : sampled.prompts)
    for (const auto& r : p.positions) {
      ASSERT_EQ(r.top_mass.size(), 3u);
      EXPECT_GE(r.top_mass[0], 0.0f);
      EXPECT_LE(r.top_mass[0], r.top_mass[1]);
      EXPECT_LE(r.top_mass[1], r.top_mass[2]);
      EXPECT_LE(r.top_mass[2], 1.0f);
      fractional += r.top_mass[2] > 0.0f && r.top_mass[2] < 1.0f ? 1 : 0;
    }
  EXPECT_GT(fractional, 0);
}

TEST(AcceptanceTopMass, TheFileKeepsItAndRefusesABadList) {
  const AcceptanceProfile a = measure_top_mass(0.0f);
  const nlohmann::json j = acceptance_profile_to_json(a);
  ASSERT_TRUE(j["prompts"][0].contains("top_mass"));
  const AcceptanceProfile back = acceptance_profile_from_json(j, "f.json");
  ASSERT_EQ(back.prompts.size(), a.prompts.size());
  for (size_t i = 0; i < a.prompts.size(); i++)
    for (size_t t = 0; t < a.prompts[i].positions.size(); t++)
      EXPECT_EQ(back.prompts[i].positions[t].top_mass, a.prompts[i].positions[t].top_mass);

  const auto refused = testing_util::expect_acceptance_file_refused;
  nlohmann::json decreasing = j;
  decreasing["prompts"][0]["top_mass"][2] = {1.0, 0.0, 1.0};
  refused(decreasing, "f.json: prompts[0]: position 2: top_mass: expected a non-decreasing list");
  nlohmann::json short_list = j;
  short_list["prompts"][1]["top_mass"].erase(0);
  refused(short_list, "f.json: prompts[1]: top_mass: expected a list of one entry per position");
  nlohmann::json above_one = j;
  above_one["prompts"][0]["top_mass"][0] = {0.5, 1.5, 1.5};
  refused(above_one, "f.json: prompts[0]: position 0: top_mass: expected numbers in [0, 1]");
}

// A lenient profile's per-position quality cost survives its file (it was collected but not
// written, so a reused lenient profile said its emitted law was exact); an exact profile's
// file leaves both optional lists out, as files before them.
TEST(AcceptanceTopMass, LenientTvAndTopMassAreWrittenOnlyWhenThereAndReadBack) {
  AcceptanceProfile a;
  a.max_depth = 2;
  AcceptancePrompt p;
  p.prompt_id = "p0";
  for (int t = 0; t < 3; t++) {
    AcceptanceRollout r;
    r.accept = {0.5f, 0.25f};
    r.top_prob = {0.9f, 0.8f};
    r.entropy = {0.1f, 0.2f};
    r.beta = 0.6f;
    r.lenient_tv = 0.125f * static_cast<float>(t);
    p.positions.push_back(r);
  }
  a.prompts.push_back(p);
  const nlohmann::json j = acceptance_profile_to_json(a);
  ASSERT_TRUE(j["prompts"][0].contains("lenient_tv"));
  EXPECT_FALSE(j["prompts"][0].contains("top_mass"));
  const AcceptanceProfile back = acceptance_profile_from_json(j, "f.json");
  for (int t = 0; t < 3; t++)
    EXPECT_EQ(back.prompts[0].positions[static_cast<size_t>(t)].lenient_tv, 0.125f * t);
  EXPECT_NEAR(acceptance_summarize(back).lenient_tv, 0.125, 1e-6);
  for (auto& r : a.prompts[0].positions) r.lenient_tv = 0;
  EXPECT_FALSE(acceptance_profile_to_json(a)["prompts"][0].contains("lenient_tv"));
}

// Seen: a prompt listed twice (weighed twice in every summary), max_depth 2.5 read as 2 and
// version 1.5 were accepted. Expected: each refused, naming the file and key.
TEST(AcceptanceProfileFile, RepeatedPromptsAndFractionalCountsAreRefused) {
  AcceptanceProfile a;
  a.max_depth = 1;
  AcceptancePrompt p;
  p.prompt_id = "p0";
  AcceptanceRollout r;
  r.accept = {0.5f};
  r.top_prob = {0.9f};
  r.entropy = {0.1f};
  p.positions.push_back(r);
  a.prompts = {p, p};
  auto error_of = [](const nlohmann::json& j) {
    try {
      acceptance_profile_from_json(j, "f.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  const nlohmann::json twice = acceptance_profile_to_json(a);
  EXPECT_EQ(error_of(twice), "f.json: prompts[1]: id 'p0' repeats prompts[0]");
  a.prompts.pop_back();
  nlohmann::json j = acceptance_profile_to_json(a);
  EXPECT_EQ(error_of(j), "(read)");
  j["max_depth"] = 2.5;
  EXPECT_EQ(error_of(j), "f.json: max_depth: expected a whole number in 0..1024, got 2.5");
  j = acceptance_profile_to_json(a);
  j["version"] = 1.5;
  EXPECT_EQ(error_of(j), "f.json: version: expected 1");
  j["version"] = "1";
  EXPECT_EQ(error_of(j), "f.json: version: expected 1");
}

}  // namespace
}  // namespace speclab
