#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/error.h"
#include "experiments/results/results_store.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ResultRow row(const std::string& id, int value = 0) {
  return ResultRow::from_json({{"cell_id", id}, {"value", value}}, "test row");
}

TEST(ResultsStore, AppendsRowsAndListsFinishedCells) {
  ScratchDir dir;
  const std::string out = dir.file("results/run");
  {
    ResultsStore store(out, ResultsOpenMode::fresh);
    store.append_row(row("c1", 1));
    store.append_row(row("c2", 2));
    EXPECT_EQ(store.finished_cell_ids(), (std::set<std::string>{"c1", "c2"}));
  }
  EXPECT_EQ(slurp(out + "/results.jsonl"),
            row("c1", 1).to_json().dump() + "\n" + row("c2", 2).to_json().dump() + "\n");
  EXPECT_FALSE(std::filesystem::exists(out + "/.lock"));  // released on close
  ResultsStore again(out, ResultsOpenMode::resume);
  EXPECT_EQ(again.finished_cell_ids(), (std::set<std::string>{"c1", "c2"}));
}

TEST(ResultsStore, FreshRunRefusesADirectoryWithResults) {
  ScratchDir dir;
  { ResultsStore(dir.file("r"), ResultsOpenMode::fresh).append_row(row("c1")); }
  try {
    ResultsStore store(dir.file("r"), ResultsOpenMode::fresh);
    FAIL() << "opened";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("r/results.jsonl") +
                  ": already holds results; pass --resume to continue that run, or --out DIR to "
                  "start a new one");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("r/.lock")));  // a refused open releases the lock
}

TEST(ResultsStore, SecondWriterIsRefusedNamingLockAndPid) {
  ScratchDir dir;
  ResultsStore first(dir.path.string(), ResultsOpenMode::fresh);
  try {
    ResultsStore second(dir.path.string(), ResultsOpenMode::resume);
    FAIL() << "second writer accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file(".lock") + ": the results directory is in use by another speclab run (pid " +
                  std::to_string(::getpid()) +
                  "); wait for it to end, or write elsewhere with --out DIR");
  }
  // The first writer still works, and its lock is intact.
  first.append_row(row("c1"));
  EXPECT_EQ(slurp(dir.file(".lock")), std::to_string(::getpid()) + "\n");
}

TEST(ResultsStore, WriterInAnotherProcessIsRefused) {
  ScratchDir dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ResultsStore store(dir.path.string(), ResultsOpenMode::fresh);
      (void)!write(ready[1], "x", 1);
      pause();  // hold the lock until killed
    } catch (...) {
    }
    _exit(3);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  try {
    ResultsStore store(dir.path.string(), ResultsOpenMode::resume);
    ADD_FAILURE() << "second writer accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(child) + ")"), std::string::npos)
        << e.what();
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  // Its lock file is stale now: taken over with a warning.
  ::testing::internal::CaptureStderr();
  { ResultsStore store(dir.path.string(), ResultsOpenMode::resume); }
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(warning, "speclab: warning: " + dir.file(".lock") +
                         ": taking over a stale lock of pid " + std::to_string(child) +
                         " (no such process)\n");
}

TEST(ResultsStore, TornFinalLineIsIgnoredAndTruncatedOnResume) {
  ScratchDir dir;
  const std::string file =
      dir.write("results.jsonl", "{\"cell_id\":\"c1\"}\n{\"cell_id\":\"c2\",\"va");
  // Readers of finished results refuse the torn row (a table or merge without that cell
  // would be wrong without a word); only the store of a resumed run drops it.
  try {
    results_read(file);
    FAIL() << "a torn final row was read past";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(file + ":2: incomplete final row (19 bytes without", 0),
              0u)
        << e.what();
  }
  ::testing::internal::CaptureStderr();
  {
    ResultsStore store(dir.path.string(), ResultsOpenMode::resume);
    EXPECT_EQ(store.finished_cell_ids(), (std::set<std::string>{"c1"}));
    store.append_row(row("c2"));
  }
  EXPECT_NE(
      ::testing::internal::GetCapturedStderr().find("dropping an incomplete final row (19 bytes)"),
      std::string::npos);
  EXPECT_EQ(slurp(file), "{\"cell_id\":\"c1\"}\n" + row("c2").to_json().dump() + "\n");
}

TEST(ResultsStore, CorruptCompleteLineIsAnError) {
  ScratchDir dir;
  const std::string file = dir.write("results.jsonl", "{\"cell_id\":\"c1\"}\nnot json\n");
  try {
    results_read(file);
    FAIL() << "read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file + ":2: not a valid JSON row");
  }
  dir.write("results.jsonl", "{\"id\":\"c1\"}\n");
  EXPECT_THROW(ResultsStore(dir.path.string(), ResultsOpenMode::resume), InputError);
}

// A writer killed at random points, then resumed, several times: every cell ends up exactly
// once and no row is torn. Rows are large (up to 256 KiB) so that a kill can land inside the
// kernel's copy of a write().
TEST(ResultsStore, SigkilledWritersResumeWithoutTornOrDuplicateRows) {
  ScratchDir dir;
  const int n_cells = 48;
  auto payload = [](int i) {
    return std::string(static_cast<size_t>(1024 + (i * 5347) % 262144),
                       static_cast<char>('a' + i % 26));
  };
  auto writer = [&]() {
    ResultsStore store(dir.path.string(), ResultsOpenMode::resume);
    for (int i = 0; i < n_cells; ++i) {
      const std::string id = "cell-" + std::to_string(i);
      if (store.finished_cell_ids().count(id)) continue;
      store.append_row(
          ResultRow::from_json({{"cell_id", id}, {"i", i}, {"payload", payload(i)}}, "test row"));
    }
  };
  std::mt19937 rng(20240601);
  int killed = 0, torn = 0;
  for (int round = 0; round < 8; ++round) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (!std::freopen("/dev/null", "w", stderr)) _exit(4);  // quiet the takeover warnings
      try {
        writer();
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    usleep(static_cast<useconds_t>(rng() % 15000));
    if (kill(child, SIGKILL) == 0) ++killed;
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 3)
        << "writer failed in round " << round;
    const std::string after = slurp(dir.file("results.jsonl"));
    if (!after.empty() && after.back() != '\n') ++torn;  // the next resume must repair it
    // A kill rarely lands inside write() (fsync dominates): every third round also leaves
    // the tear a kill mid-write would, so resume always meets one.
    if (round % 3 == 1 && (after.empty() || after.back() == '\n'))
      std::ofstream(dir.file("results.jsonl"), std::ios::app)
          << "{\"cell_id\":\"cell-torn\",\"i\":";
  }
  EXPECT_GT(killed, 0);
  RecordProperty("kills_leaving_a_torn_row", torn);  // how often the repair path ran
  ::testing::internal::CaptureStderr();              // stale-lock and torn-row warnings
  writer();
  ::testing::internal::GetCapturedStderr();
  const std::string text = slurp(dir.file("results.jsonl"));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const auto rows = results_read(dir.file("results.jsonl"));
  ASSERT_EQ(rows.size(), static_cast<size_t>(n_cells));
  std::set<std::string> ids;
  for (const auto& r : rows) {
    const int i = r.extra["i"].get<int>();
    EXPECT_TRUE(ids.insert(r.cell.cell_id).second) << "duplicate " << r.cell.cell_id;
    EXPECT_EQ(r.extra["payload"].get<std::string>(), payload(i)) << "row " << i << " damaged";
  }
}

TEST(ResultsMerge, JoinsShardsDedupsAndRejectsConflicts) {
  ScratchDir dir;
  const std::string a =
      dir.write("a.jsonl", "{\"cell_id\":\"c1\",\"v\":1}\n{\"cell_id\":\"c3\",\"v\":3}\n");
  const std::string torn = dir.write(
      "b.jsonl",
      "{\"cell_id\":\"c2\",\"v\":2}\n{\"cell_id\":\"c1\",\"v\":1}\n{\"cell_id\":\"c4\",\"v\"");
  const std::string out = dir.file("merged/results.jsonl");
  // Seen: the torn c4 row was dropped and the merge said nothing. Expected: refused, no output.
  EXPECT_THROW(results_merge({a, torn}, out), InputError);
  EXPECT_FALSE(std::filesystem::exists(out));
  const std::string b =
      dir.write("b.jsonl", "{\"cell_id\":\"c2\",\"v\":2}\n{\"cell_id\":\"c1\",\"v\":1}\n");
  EXPECT_EQ(results_merge({a, b}, out), 3u);
  EXPECT_EQ(
      slurp(out),
      "{\"cell_id\":\"c1\",\"v\":1}\n{\"cell_id\":\"c3\",\"v\":3}\n{\"cell_id\":\"c2\",\"v\":2}\n");
  const std::string c = dir.write("c.jsonl", "{\"cell_id\":\"c3\",\"v\":30}\n");
  try {
    results_merge({a, b, c}, out);
    FAIL() << "conflict accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              c + ":1: cell_id c3 conflicts with the different row at " + a + ":2");
  }
  EXPECT_EQ(results_read(out).size(), 3u);  // the failed merge left the output alone
  EXPECT_THROW(results_merge({dir.file("none.jsonl")}, out), InputError);
  // Seen: inputs without rows gave an empty output, exit 0. Expected: nothing to merge.
  const std::string empty = dir.write("empty.jsonl", "\n\n");
  try {
    results_merge({empty}, dir.file("e.jsonl"));
    FAIL() << "an empty merge was written";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("e.jsonl") + ": nothing to merge (the input files hold no rows)");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("e.jsonl")));
}

// Rows a reader must refuse rather than pool or use: a second row of the same cell (a file
// appended to itself doubled every count in the tables), ids that would name files outside
// the output folder, and cell parameters of the wrong type, named.
TEST(ResultsRead, RepeatsUnsafeIdsAndWrongTypesAreNamed) {
  ScratchDir dir;
  auto error_of = [&](const std::string& text) {
    const std::string file = dir.write("r.jsonl", text);
    try {
      results_read(file);
    } catch (const InputError& e) {
      return std::string(e.what()).substr(file.size());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\"}\n{\"cell_id\":\"c2\"}\n{\"cell_id\":\"c1\"}\n"),
            ":3: cell_id c1 has a row already, at line 1 (a cell has one row; speclab merge joins "
            "shards and drops repeats)");
  // The same cell under two configs, or as a measured and a predicted row, is no repeat.
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"config_hash\":\"a\"}\n{\"cell_id\":\"c1\","
                     "\"config_hash\":\"b\"}\n{\"cell_id\":\"c1\",\"config_hash\":\"a\","
                     "\"row_kind\":\"predicted\"}\n"),
            "(read)");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"config_hash\":\"x/../../escaped\"}\n"),
            ":1: config_hash 'x/../../escaped': expected 1-64 letters, digits, '.', '_' or '-' "
            "(not . or ..)");
  EXPECT_EQ(error_of("{\"cell_id\":\"..\"}\n"),
            ":1: cell_id '..': expected 1-64 letters, digits, '.', '_' or '-' (not . or ..)");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"alpha_empirical\":0.5,\"alpha_empirical\":0.9}\n"),
            ":1: key \"alpha_empirical\" appears twice in one object (expected each once)");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"gamma\":\"two\"}\n"),
            ":1: field gamma: expected a number, got string");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"drafter\":3}\n"),
            ":1: field drafter: expected a string, got number");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"draft_temperature_same\":1}\n"),
            ":1: field draft_temperature_same: expected true or false, got number");
  // Seen: values read as they were (gamma 10^15 printed as a negative number, 2.5 read as 2,
  // accepted above tested). Expected: the axes' own ranges and the counts' invariants.
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"gamma\":65}\n"),
            ":1: field gamma: expected an integer in 1..64, got 65");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"gamma\":2.5}\n"),
            ":1: field gamma: expected an integer, got 2.5");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"temperature\":-1}\n"),
            ":1: field temperature: expected a number >= 0 (0 = greedy), got -1");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"cell_index\":-7}\n"),
            ":1: field cell_index: expected an integer >= 0, got -7");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"tested\":10,\"accepted\":11}\n"),
            ":1: field accepted: expected 0 <= accepted <= tested, got 11 of 10");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"tested\":-100}\n"),
            ":1: field tested: expected an integer >= 0, got -100");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"alpha_empirical\":7}\n"),
            ":1: field alpha_empirical: expected a fraction in [0, 1], got 7");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"alpha_se\":-1}\n"),
            ":1: field alpha_se: expected a number >= 0, got -1");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"samples\":[{\"tested\":1,\"accepted\":-1}]}\n"),
            ":1: samples[0]: field accepted: expected an integer >= 0, got -1");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"samples\":[{\"tested\":1,\"accepted\":2}]}\n"),
            ":1: field samples[0].accepted: expected 0 <= accepted <= tested, got 2 of 1");
  // Seen: every other count read as it was (rounds -1, max_new_tokens -4, a sample's seed -1).
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"rounds\":-1}\n"),
            ":1: field rounds: expected an integer >= 0, got -1");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"tested_by_position\":[5,-2]}\n"),
            ":1: field tested_by_position[1]: expected an integer >= 0, got -2");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"tested_by_position\":[5,2],"
                     "\"accepted_by_position\":[5,3]}\n"),
            ":1: field accepted_by_position[1]: 3 is more than tested_by_position[1] = 2");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"acceptance_by_position\":[2.0,0.5]}\n"),
            ":1: field acceptance_by_position[0]: expected a probability in [0, 1], got 2");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"samples\":[{\"rounds\":-3}]}\n"),
            ":1: samples[0]: field rounds: expected an integer >= 0, got -3");
  EXPECT_EQ(error_of("{\"cell_id\":\"c1\",\"alpha_empirical\":null,\"tested\":0,"
                     "\"accepted\":0}\n"),
            "(read)");  // NaN is written as null
}

// Seen: a symbolic link at DIR/.lock was written through (the file it named became a pid) and
// its content echoed over several lines. Expected: refused, the file it names unchanged.
TEST(ResultsStore, ALockThatIsNotARegularFileIsRefused) {
  ScratchDir dir;
  const std::string precious = dir.write("precious.txt", "PRECIOUS DATA\nline 2\n");
  std::filesystem::create_directories(dir.file("out"));
  std::filesystem::create_symlink(precious, dir.file("out/.lock"));
  try {
    ResultsStore store(dir.file("out"), ResultsOpenMode::fresh);
    FAIL() << "a linked lock was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("out/.lock") +
                                         ": is a symbolic link, expected speclab's own lock file "
                                         "(a regular file; remove the link)");
  }
  EXPECT_EQ(slurp(precious), "PRECIOUS DATA\nline 2\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("out/.lock")));
  std::filesystem::remove(dir.file("out/.lock"));
  ASSERT_EQ(mkfifo(dir.file("out/.lock").c_str(), 0644), 0);
  EXPECT_THROW(ResultsStore(dir.file("out"), ResultsOpenMode::fresh), InputError);
  // A stale lock holding text, not a pid, is taken over without echoing the text.
  std::filesystem::remove(dir.file("out/.lock"));
  dir.write("out/.lock", "two\nlines\n");
  ::testing::internal::CaptureStderr();
  { ResultsStore store(dir.file("out"), ResultsOpenMode::fresh); }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("taking over a stale lock of pid unknown"), std::string::npos) << err;
  EXPECT_EQ(err.find("lines"), std::string::npos) << err;
}

// Rows of two configs: refused naming both hashes and places; with allow_mixed_configs kept
// as one group per config, and the same cell_id under two configs is not a conflict.
TEST(ResultsMerge, RowsOfDifferentConfigsAreRefusedOrKeptApart) {
  ScratchDir dir;
  const std::string a = dir.write("a.jsonl",
                                  "{\"cell_id\":\"c1\",\"config_hash\":\"h1\",\"v\":1}\n"
                                  "{\"cell_id\":\"c2\",\"config_hash\":\"h1\",\"v\":2}\n");
  const std::string b = dir.write("b.jsonl",
                                  "{\"cell_id\":\"c1\",\"config_hash\":\"h2\",\"v\":10}\n"
                                  "{\"cell_id\":\"c3\",\"config_hash\":\"h1\",\"v\":3}\n");
  const std::string out = dir.file("all.jsonl");
  try {
    results_merge({a, b}, out);
    FAIL() << "mixed configs merged";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              b + ":1: config_hash h2 differs from config_hash h1 at " + a +
                  ":1; rows of different configs are not merged (--allow-mixed-configs keeps "
                  "them apart)");
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  results_merge({a, b}, out, /*allow_mixed_configs=*/true);
  EXPECT_EQ(slurp(out),
            "{\"cell_id\":\"c1\",\"config_hash\":\"h1\",\"v\":1}\n"
            "{\"cell_id\":\"c2\",\"config_hash\":\"h1\",\"v\":2}\n"
            "{\"cell_id\":\"c3\",\"config_hash\":\"h1\",\"v\":3}\n"
            "{\"cell_id\":\"c1\",\"config_hash\":\"h2\",\"v\":10}\n");
}

}  // namespace
}  // namespace speclab
