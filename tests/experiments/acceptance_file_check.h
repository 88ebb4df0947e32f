// A test helper: an acceptance profile file (its JSON) that must be refused, with the one
// line it must say.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "experiments/predict/profile_io.h"

namespace speclab {
namespace testing_util {

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
