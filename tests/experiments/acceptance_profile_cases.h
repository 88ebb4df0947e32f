// Test helpers for the acceptance profile's tree lists: a profile measured on the tiny zoo,
// and a file (its JSON) that must be refused with the one line it must say.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/predict/acceptance_profile.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"

namespace speclab {
namespace testing_util {

// The tiny target and its 0.5m draft on three short prompts, 30 tokens each, rollouts of depth
// 3, seed 7; the caller sets the sampling and which lists to measure (90 positions).
inline AcceptanceProfile tiny_zoo_acceptance_profile(AcceptanceProfileRequest r) {
  const std::string zoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";
  const auto target = llama_load(zoo + "tiny-target-5m");
  LlamaRunner runner(*target, 128);
  auto drafter = drafter_create(zoo + "tiny-draft-0.5m", *target, 128);
  std::vector<PromptTokens> prompts;
  for (int i = 0; i < 3; i++)
    prompts.push_back({"p" + std::to_string(i), {1, 17 + i, 40 + 3 * i, 9, 33}, ""});
  r.depth = 3;
  r.max_new_tokens = 30;
  r.seed = 7;
  return acceptance_profile_measure(runner, *drafter, prompts, r);
}

// Reads `bad` as the file "f.json"; the read must throw InputError whose text contains `said`.
inline void expect_acceptance_file_refused(const nlohmann::json& bad, const std::string& said) {
  try {
    acceptance_profile_from_json(bad, "f.json");
    ADD_FAILURE() << "accepted; expected: " << said;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what();
  }
}

}  // namespace testing_util
}  // namespace speclab
