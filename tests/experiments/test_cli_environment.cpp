// The executable sets OMP_WAIT_POLICY=passive for itself when the user has not chosen a
// policy (experiments/cli/main.cpp re-executes itself once), and keeps an explicit choice.
#include <gtest/gtest.h>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::run_speclab;

TEST(CliEnvironment, RunsWithAndWithoutAnOpenMpWaitPolicy) {
  // run_speclab goes through the shell: `env -u` drops the variable ctest sets.
  const auto unset = run_speclab("--version");
  EXPECT_EQ(unset.exit_code, 0) << unset.err;
  const std::string bin = SPECLAB_BIN;
  const int rc = std::system(("env -u OMP_WAIT_POLICY '" + bin + "' --version >/dev/null").c_str());
  EXPECT_EQ(rc, 0);
  const int rc_active =
      std::system(("OMP_WAIT_POLICY=active '" + bin + "' --version >/dev/null").c_str());
  EXPECT_EQ(rc_active, 0);
  // A bad-input exit code survives the re-execution.
  const int rc_bad = std::system(
      ("env -u OMP_WAIT_POLICY '" + bin + "' generate --target /nonexistent --prompt x 2>/dev/null")
          .c_str());
  EXPECT_TRUE(WIFEXITED(rc_bad));
  EXPECT_EQ(WEXITSTATUS(rc_bad), 2);
}

}  // namespace
}  // namespace speclab
