// Every verb's --help lists every option with its default ("=VALUE" after the type, or the
// default in words in the description), so a user never has to read the source for it.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;

// The option lines of a CLI11 help text: "  --name ..." (a long description may wrap onto the
// next line, indented, which is folded into the option's entry).
std::vector<std::string> option_entries(const std::string& help) {
  std::vector<std::string> entries;
  std::istringstream in(help);
  std::string line;
  bool in_options = false;
  while (std::getline(in, line)) {
    if (line == "Options:") {
      in_options = true;
    } else if (in_options && line.rfind("  -", 0) == 0) {
      entries.push_back(line);
    } else if (in_options && line.rfind("    ", 0) == 0 && !entries.empty()) {
      entries.back() += line;
    } else if (in_options && line.empty()) {
      in_options = false;
    }
  }
  return entries;
}

TEST(CliHelp, EveryVerbListsEveryOptionWithItsDefault) {
  const std::vector<std::string> verbs = {"generate", "inspect", "tokenize", "simulate", "run",
                                          "table",    "check",   "ngram",    "merge"};
  for (const auto& verb : verbs) {
    const CliResult r = run_speclab(verb + " --help");
    ASSERT_EQ(r.exit_code, 0) << verb << ": " << r.err;
    const auto entries = option_entries(r.out);
    ASSERT_FALSE(entries.empty()) << verb << ":\n" << r.out;
    for (const auto& e : entries) {
      if (e.find("--help") != std::string::npos) continue;
      // "--gamma INT:INT in [1 - 64]=4": the captured default follows '=' in the first column.
      const std::string first_column = e.substr(0, e.find("  ", 2));
      const bool has_value_default = first_column.find('=') != std::string::npos;
      const bool said_in_words = e.find("default") != std::string::npos;
      const bool required = e.find("REQUIRED") != std::string::npos;
      EXPECT_TRUE(has_value_default || said_in_words || required)
          << verb << ": option without a stated default: " << e;
    }
  }
  // Spot checks that the defaults are the values the code uses.
  const std::string gen = run_speclab("generate --help").out;
  EXPECT_NE(gen.find("--gamma INT:INT in [1 - 64]=4"), std::string::npos) << gen;
  EXPECT_NE(gen.find("--chat-template TEXT=none"), std::string::npos) << gen;
  EXPECT_NE(gen.find("--max-new-tokens INT:INT in [1 - 1073741824]=64"), std::string::npos) << gen;
  EXPECT_NE(gen.find("do not stop at EOS [default: off]"), std::string::npos) << gen;
}

}  // namespace
}  // namespace speclab
