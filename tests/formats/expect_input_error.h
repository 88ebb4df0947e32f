// EXPECT that a call throws InputError whose one-line message contains every needle.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace speclab {
namespace testing {

template <typename F>
void expect_input_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected InputError containing '" << (needles.empty() ? "" : needles[0])
                  << "', nothing was thrown";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    for (const std::string& needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos)
          << "message: " << msg << "\nmissing: " << needle;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
  }
}

}  // namespace testing
}  // namespace speclab
