// Round traces: `speclab generate --trace` and `speclab run --trace` write every speculative
// round, the trace agrees with the generation it records (tokens, counts), and `speclab
// simulate --replay` at the recorded gamma reproduces the tokens of every round exactly.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using nlohmann::json;
using testing_util::run_speclab;
using testing_util::ScratchDir;

const std::string kSrc = SPECLAB_SOURCE_DIR;
const std::string kTarget = kSrc + "/models/zoo/tiny-target-5m";

std::vector<json> read_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

json replay(const ScratchDir& dir, const std::vector<json>& rounds, int gamma) {
  std::string text;
  for (const auto& r : rounds) text += r.dump() + "\n";
  const std::string path = dir.write("replay.jsonl", text);
  const auto r =
      run_speclab("simulate --replay '" + path + "' --gamma " + std::to_string(gamma) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["replay"];
}

// Each round alone, replayed at the recorded gamma, yields exactly its n_accepted + 1 tokens
// (= n_emitted: no stop token, the budget never cuts a round) with nothing imputed; all
// rounds together give the generation's tokens per round.
void expect_replay_reproduces(const ScratchDir& dir, const std::vector<json>& rounds, int gamma,
                              double tau) {
  for (size_t i = 0; i < rounds.size(); i++) {
    const json one = replay(dir, {rounds[i]}, gamma);
    EXPECT_EQ(one["imputed_rounds"], 0) << rounds[i];
    EXPECT_EQ(one["tokens"], rounds[i]["n_emitted"]) << "round " << i << ": " << rounds[i];
    EXPECT_EQ(one["drafted"], rounds[i]["n_draft"]) << rounds[i];
  }
  const json all = replay(dir, rounds, gamma);
  EXPECT_EQ(all["rounds"], rounds.size());
  EXPECT_EQ(all["imputed_rounds"], 0);
  EXPECT_DOUBLE_EQ(all["tokens_per_round"].get<double>(), tau);
}

TEST(CliTrace, GenerateTraceReplaysExactly) {
  ScratchDir dir;
  const std::string trace = dir.file("gen.jsonl");
  const auto r = run_speclab("generate --target '" + kTarget + "' --draft '" + kSrc +
                             "/models/zoo/tiny-draft-0.5m' --prompt-ids 1,200,300,400,500 "
                             "--gamma 4 --temperature 1 --seed 3 --max-new-tokens 30 --ignore-eos "
                             "--json --trace '" +
                             trace + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json gen = json::parse(r.out);
  const auto rounds = read_lines(trace);
  ASSERT_EQ(rounds.size(), gen["rounds"].get<size_t>());
  // The trace is the generation: emitted tokens concatenate to the output, counts add up, and
  // the per-position records have the round's draft length.
  std::vector<int32_t> tokens;
  int64_t drafted = 0, accepted = 0;
  bool some_capped = false;
  for (const auto& round : rounds) {
    const int g = round["n_draft"], n = round["n_accepted"];
    for (const auto& t : round["emitted"]) tokens.push_back(t.get<int32_t>());
    drafted += g;
    accepted += n;
    EXPECT_EQ(round["drafted"].size(), static_cast<size_t>(g));
    EXPECT_EQ(round["p"].size(), static_cast<size_t>(g));
    EXPECT_EQ(round["q"].size(), static_cast<size_t>(g));
    EXPECT_EQ(round["accept"].size(), static_cast<size_t>(std::min(n + 1, g)));
    for (int i = 0; i < static_cast<int>(round["accept"].size()); i++)
      EXPECT_EQ(round["accept"][i].get<bool>(), i < n) << round;
    EXPECT_EQ(round["n_emitted"], n + 1);
    EXPECT_GE(round["draft_cap"].get<int>(), g);
    some_capped = some_capped || round["draft_cap"].get<int>() < 4;
    EXPECT_GE(round["verify_s"].get<double>(), 0.0);
  }
  EXPECT_EQ(tokens, gen["tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(drafted, gen["drafted"].get<int64_t>());
  EXPECT_EQ(accepted, gen["accepted"].get<int64_t>());
  EXPECT_TRUE(some_capped);  // the budget cuts the last rounds below gamma
  expect_replay_reproduces(dir, rounds, 4, gen["tau"].get<double>());
}

// A run's trace, one group of rounds per cell (and prompt): a model drafter and the lookup
// drafter (whose misses draft fewer than gamma, or nothing). Per cell, the rounds match the
// row's counts and the replay at the cell's gamma reproduces every round and the row's tau.
TEST(CliTrace, RunTraceReplaysEachCellExactly) {
  ScratchDir dir;
  const std::string trace = dir.file("run.jsonl");
  const auto r =
      run_speclab("run '" + kSrc + "/configs/gate.yaml' --out '" + dir.file("out") +
                  "' --no-plots --trace '" + trace +
                  "' --set 'sweep.drafter=[draft-0.5m, lookup]' --set 'sweep.gamma=[3]' --set "
                  "'sweep.temperature=[0, 1]' --set 'sweep.exclude=[]' --set "
                  "prompts.limit=2 --set generation.max_new_tokens=24");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_lines(dir.file("out/results.jsonl"));
  ASSERT_EQ(rows.size(), 4u);  // 2 drafters x T {0, 1}
  std::map<std::string, std::vector<json>> by_cell;
  for (auto& round : read_lines(trace))
    by_cell[round["cell_id"].get<std::string>()].push_back(round);
  ASSERT_EQ(by_cell.size(), 4u);
  bool drafter_short = false;
  for (const auto& row : rows) {
    const auto& rounds = by_cell[row["cell_id"].get<std::string>()];
    ASSERT_EQ(rounds.size(), row["rounds"].get<size_t>()) << row["cell_id"];
    int64_t accepted = 0;
    for (const auto& round : rounds) {
      accepted += round["n_accepted"].get<int64_t>();
      EXPECT_EQ(round["gamma"], 3);
      drafter_short =
          drafter_short || (round["n_draft"].get<int>() < 3 &&
                            round["draft_cap"] == round["n_draft"] && row["drafter"] == "lookup");
    }
    EXPECT_EQ(accepted, row["accepted"].get<int64_t>());
    expect_replay_reproduces(dir, rounds, 3, row["tau"].get<double>());
  }
  EXPECT_TRUE(drafter_short);  // the lookup drafter's misses are in the trace as caps
}

TEST(CliTrace, BadTraceArgumentsExitTwo) {
  ScratchDir dir;
  const std::string gen = "generate --target '" + kTarget +
                          "' --prompt-ids 1,2,3 "
                          "--max-new-tokens 4 ";
  const auto no_draft = run_speclab(gen + "--trace '" + dir.file("t.jsonl") + "'");
  EXPECT_EQ(no_draft.exit_code, 2);
  EXPECT_TRUE(no_draft.one_line_error()) << no_draft.err;
  EXPECT_NE(no_draft.err.find("--trace: records the rounds of chain speculation"),
            std::string::npos)
      << no_draft.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.jsonl")));

  const std::string bad = dir.file("no/such/dir/t.jsonl");
  const auto unwritable = run_speclab(gen + "--draft lookup:n=2 --trace '" + bad + "'");
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_TRUE(unwritable.one_line_error()) << unwritable.err;
  EXPECT_NE(unwritable.err.find(bad + ": cannot create the trace file"), std::string::npos)
      << unwritable.err;

  // Seen: the path was first tried after the whole generation. Expected: before any model is
  // loaded, so a trace path that cannot work is named even when the model would fail too.
  const auto early = run_speclab("generate --target '" + dir.file("no-model") +
                                 "' --draft lookup:n=2 --prompt-ids 1,2 --trace '" + bad + "'");
  EXPECT_EQ(early.exit_code, 2);
  EXPECT_TRUE(early.one_line_error()) << early.err;
  EXPECT_NE(early.err.find(bad + ": cannot create the trace file: its folder"), std::string::npos)
      << early.err;

  const auto run = run_speclab("run '" + kSrc + "/configs/gate.yaml' --out '" + dir.file("out") +
                               "' --no-plots --trace '" + bad + "' --set 'sweep.drafter=[lookup]'");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(run.one_line_error()) << run.err;
  EXPECT_NE(run.err.find(bad), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/results.jsonl")));  // no partial result
}

// A trace that cannot be written leaves what is at its path as it was: an existing folder is
// not removed, a FIFO that nothing reads is refused at once (no wait) and stays a FIFO.
TEST(CliTrace, UnwritableTracePathIsLeftAsItWas) {
  ScratchDir dir;
  const std::string gen = "generate --target '" + kTarget +
                          "' --draft lookup:n=2 --prompt-ids 1,2,3 --max-new-tokens 4 --trace '";
  std::filesystem::create_directories(dir.file("folder"));
  const auto folder = run_speclab(gen + dir.file("folder") + "'");
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_TRUE(folder.one_line_error()) << folder.err;
  EXPECT_NE(folder.err.find(dir.file("folder") + ": is a directory"), std::string::npos)
      << folder.err;
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("folder")));

  const std::string fifo = dir.file("t.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const auto no_reader = run_speclab(gen + fifo + "'");
  EXPECT_EQ(no_reader.exit_code, 2);
  EXPECT_TRUE(no_reader.one_line_error()) << no_reader.err;
  EXPECT_NE(no_reader.err.find(fifo + ": is a FIFO (named pipe) or socket that nothing reads"),
            std::string::npos)
      << no_reader.err;
  EXPECT_EQ(std::filesystem::status(fifo).type(), std::filesystem::file_type::fifo);
}

}  // namespace
}  // namespace speclab
