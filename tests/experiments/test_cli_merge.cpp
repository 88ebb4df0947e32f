// Sharded runs merged with `speclab merge` hold every cell of the sweep exactly once; a
// missing shard is bad input (exit 2, one line).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

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

// Seen: merge into a FIFO with a reader wrote every row, then read its output back to count
// the rows and exited 2 ("is a FIFO"). Expected: exit 0, the reader gets the rows, the count
// is of what was written.
TEST(CliMerge, AFifoWithAReaderGetsTheRowsAndExitsZero) {
  testing_util::ScratchDir dir;
  const std::string in = dir.write("in.jsonl", "{\"cell_id\":\"c1\"}\n{\"cell_id\":\"c2\"}\n");
  const std::string fifo = dir.file("out.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream f(fifo);  // blocks until merge opens the FIFO (or the release below)
    got.assign(std::istreambuf_iterator<char>(f), {});
  });
  const auto r = run_speclab("merge '" + fifo + "' '" + in + "'");
  const int release = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // a reader still waiting
  if (release >= 0) ::close(release);
  reader.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2 rows in " + fifo + "\n");
  EXPECT_EQ(got, "{\"cell_id\":\"c1\"}\n{\"cell_id\":\"c2\"}\n");
}

}  // namespace
}  // namespace speclab
