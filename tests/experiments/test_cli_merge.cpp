// Sharded runs merged with `speclab merge` hold every cell of the sweep exactly once; a
// missing shard is bad input (exit 2, one line).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::run_speclab;

TEST(CliMerge, ShardsMergeToTheWholeSweep) {
  testing_util::ScratchDir dir;
  const std::string cfg = std::string(SPECLAB_SOURCE_DIR) + "/configs/gate.yaml";
  const std::string common =
      " --set measure.baseline=false --set 'sweep.drafter=[lookup]' "
      "--set prompts.limit=2 --set generation.max_new_tokens=8 --no-plots";
  for (int i = 0; i < 2; i++) {
    const auto r = run_speclab("run '" + cfg + "' --shard " + std::to_string(i) + "/2 --out '" +
                               dir.file("s" + std::to_string(i)) + "'" + common);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto m = run_speclab("merge '" + dir.file("all.jsonl") + "' '" + dir.file("s0") + "' '" +
                             dir.file("s1") + "' '" + dir.file("s0") + "'");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  std::ifstream f(dir.file("all.jsonl"));
  std::set<std::string> ids;
  std::string line;
  int rows = 0;
  while (std::getline(f, line)) {
    ids.insert(nlohmann::json::parse(line)["cell_id"].get<std::string>());
    rows++;
  }
  EXPECT_EQ(rows, 4);  // lookup x gamma {2, 4} x T {0, 1}; the repeated shard adds nothing
  EXPECT_EQ(ids.size(), 4u);
}

TEST(CliMerge, MissingShardIsBadInput) {
  testing_util::ScratchDir dir;
  const auto r = run_speclab("merge '" + dir.file("all.jsonl") + "' '" + dir.file("nope") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace speclab
