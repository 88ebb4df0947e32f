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

// Seen: SPECLAB_MEMORY_LIMIT=1e3 read as 1 byte, "junk" or -1 as unset; SPECLAB_NO_THP=junk
// as set. Expected: every verb stops before it runs, naming the variable and its value.
TEST(CliEnvironment, MisspeltMemorySettingsStopEveryVerb) {
  for (const auto& [env, needle] :
       {std::pair<std::string, std::string>{
            "SPECLAB_MEMORY_LIMIT=1e3",
            "SPECLAB_MEMORY_LIMIT: '1e3' (expected a whole number of bytes > 0, below 10^18)"},
        {"SPECLAB_MEMORY_LIMIT=junk", "SPECLAB_MEMORY_LIMIT: 'junk'"},
        {"SPECLAB_MEMORY_LIMIT=-1", "SPECLAB_MEMORY_LIMIT: '-1'"},
        {"SPECLAB_MEMORY_LIMIT=0", "SPECLAB_MEMORY_LIMIT: '0'"},
        {"SPECLAB_NO_THP=junk",
         "SPECLAB_NO_THP: 'junk' (expected 1 to keep weights on 4 KB "
         "pages, or leave it unset)"}}) {
    const auto r = run_speclab("--version", env);
    EXPECT_EQ(r.exit_code, 2) << env;
    EXPECT_TRUE(r.one_line_error()) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  for (const char* ok : {"SPECLAB_MEMORY_LIMIT=1000000", "SPECLAB_NO_THP=1"})
    EXPECT_EQ(run_speclab("--version", ok).exit_code, 0) << ok;
}

}  // namespace
}  // namespace speclab
