// `speclab run` with sweep.concurrency end to end on the tiny zoo: a cell of concurrency N
// serves the prompts N at a time (continuous batching); its row carries throughput, per-request
// times and both speedups with intervals; at temperature 0 its speculative tokens equal its
// plain loop's (greedy_outputs_match) and the concurrency-1 cell's; tables.md shows the
// concurrency tables; configs that cannot serve a concurrency are refused before any cell.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

std::string config_text(const std::string& sweep_tail, const std::string& measure_tail = "") {
  const std::string src = SPECLAB_SOURCE_DIR;
  return "name: conc\n"
         "question: \"q\"\n"
         "target: " +
         src +
         "/models/zoo/tiny-target-5m\n"
         "drafters:\n"
         "  d: " +
         src +
         "/models/zoo/tiny-draft-0.5m\n"
         "  lookup: lookup\n"
         "prompts:\n"
         "  file: " +
         src +
         "/configs/prompts/tiny-in-domain.jsonl\n"
         "  limit: 5\n"
         "generation:\n"
         "  max_new_tokens: 16\n"
         "  warmup: 1\n"
         "  threads: 1\n"
         "  ctx: 128\n"
         "  ignore_eos: true\n"
         "measure:\n"
         "  bootstrap_resamples: 50\n" +
         measure_tail +
         "sweep:\n"
         "  drafter: [d]\n"
         "  gamma: [3]\n"
         "  temperature: [0]\n" +
         sweep_tail;
}

TEST(CliRunConcurrency, RowsCarryThroughputAndMatchTheOneAtATimeCell) {
  ScratchDir d;
  const std::string cfg = d.write("conc.yaml", config_text("  concurrency: [1, 3]\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(d.file("out/results.jsonl"));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  const auto& one = rows[0];
  const auto& three = rows[1];
  EXPECT_FALSE(one.contains("concurrency"));  // the default: rows and ids as before the axis
  EXPECT_EQ(three["concurrency"], 3);
  EXPECT_NE(one["cell_id"], three["cell_id"]);
  // Greedy: the batched speculative loop reproduces the batched plain loop, and the tokens
  // match the one-at-a-time cell's (same counts; the samples hold them per request).
  EXPECT_EQ(three["greedy_outputs_match"], true);
  EXPECT_EQ(three["tokens_spec"], one["tokens_spec"]);
  EXPECT_EQ(three["accepted"], one["accepted"]);
  EXPECT_EQ(three["samples"].size(), 5u);
  for (const char* key :
       {"throughput_baseline_tokens_per_s", "throughput_spec_tokens_per_s", "throughput_speedup",
        "throughput_speedup_ci_lo", "throughput_speedup_ci_hi", "tpot_baseline_median_s",
        "tpot_baseline_p90_s", "tpot_spec_median_s", "tpot_spec_p90_s", "ttft_baseline_median_s",
        "ttft_spec_median_s", "speedup", "speedup_ci_lo", "speedup_ci_hi"}) {
    ASSERT_TRUE(three.contains(key)) << key;
    EXPECT_GT(three[key].get<double>(), 0.0) << key;
  }
  // The interval brackets the figure it is quoted with.
  EXPECT_LE(three["throughput_speedup_ci_lo"].get<double>(),
            three["throughput_speedup"].get<double>());
  EXPECT_GE(three["throughput_speedup_ci_hi"].get<double>(),
            three["throughput_speedup"].get<double>());
  EXPECT_LE(three["tpot_spec_median_s"].get<double>(), three["tpot_spec_p90_s"].get<double>());
  EXPECT_GT(three["mean_active_requests_spec"].get<double>(), 1.0);
  EXPECT_LE(three["mean_active_requests_spec"].get<double>(), 3.0);
  EXPECT_FALSE(one.contains("throughput_speedup"));
  std::ifstream t(d.file("out/tables.md"));
  std::stringstream ss;
  ss << t.rdbuf();
  EXPECT_NE(ss.str().find("Many requests at once"), std::string::npos);
  EXPECT_NE(ss.str().find("| d | 0.0 | 3 | fixed | - | "), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("last N above 1x"), std::string::npos);
}

TEST(CliRunConcurrency, ConfigsThatCannotServeAConcurrencyAreRefusedBeforeAnyCell) {
  struct Case {
    std::string sweep, measure, env, expected;
  };
  const std::vector<Case> cases = {
      {"  concurrency: [0, 2]\n", "", "",
       "sweep.concurrency[0]: expected an integer in 1..256, got 0"},
      {"  concurrency: [2]\n  tree: [2x1]\n", "", "",
       "sweep.concurrency: concurrency 2 with tree 2x1: trees serve one request at a time"},
      {"  concurrency: [1, 4]\n", "  cost_only: true\n", "",
       "sweep.concurrency: concurrency 4 measures generation; measure.cost_only has none"},
      {"  concurrency: [1, 64]\n", "", "SPECLAB_MEMORY_LIMIT=1000000",
       "sweep.concurrency: concurrency 64 x 128 positions needs"},
  };
  for (const Case& c : cases) {
    ScratchDir d;
    const std::string cfg = d.write("conc.yaml", config_text(c.sweep, c.measure));
    const std::string args = "run '" + cfg + "' --out '" + d.file("out") + "' --no-plots";
    const CliResult r = run_speclab(args, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.expected << "\n" << r.err;
    const size_t last = r.err.rfind('\n', r.err.size() - 2);
    const std::string last_line = r.err.substr(last == std::string::npos ? 0 : last + 1);
    EXPECT_NE(last_line.find(c.expected), std::string::npos) << r.err;
    EXPECT_NE(last_line.find("conc.yaml:"), std::string::npos) << r.err;
    EXPECT_FALSE(std::ifstream(d.file("out/results.jsonl")).good()) << c.expected;
  }
}

}  // namespace
}  // namespace speclab
