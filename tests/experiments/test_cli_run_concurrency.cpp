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
  return testing_util::tiny_zoo_config_head("conc", 5, "  lookup: lookup\n") +
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
  const std::string cfg = d.write("conc.yaml", config_text("  concurrency: [1, 3, 5]\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> rows = testing_util::read_jsonl(d.file("out/results.jsonl"));
  ASSERT_EQ(rows.size(), 3u);
  const auto& one = rows[0];
  const auto& three = rows[1];
  const auto& five = rows[2];
  // Five prompts at N = 5: every request in flight at once, nothing for a bootstrap over
  // prompts to resample: the figures, but no interval, and the table says so.
  EXPECT_EQ(five["concurrency"], 5);
  EXPECT_TRUE(five.contains("throughput_speedup"));
  EXPECT_TRUE(five.contains("speedup"));
  for (const char* key :
       {"throughput_speedup_ci_lo", "throughput_speedup_ci_hi", "speedup_ci_lo", "speedup_ci_hi"})
    EXPECT_FALSE(five.contains(key)) << key;
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
  EXPECT_NE(ss.str().find("| 5 | "), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("not estimated"), std::string::npos) << ss.str();
}

// Every cell of concurrency > 1 is predicted before it runs from the batched cost profile: the
// row carries the predicted throughput and per-request speedups and their errors against the
// measured ones; the profile lands in DIR/profiles, where `speclab predict --profiles DIR`
// (no model loaded) reads it and predicts the same figures, and `--resume` reuses it.
TEST(CliRunConcurrency, CellsArePredictedFromTheBatchedCostProfile) {
  ScratchDir d;
  // No check before the cell of one request: a retake of its cost profile (which the batched
  // predictions read too) would leave `speclab predict --profiles`, which reads the group's
  // first profile, predicting from other figures than the run did.
  const std::string cfg = d.write(
      "conc.yaml", config_text("  concurrency: [1, 2, 3]\n", "  cost_profile_recheck: 0\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> rows = testing_util::read_jsonl(d.file("out/results.jsonl"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].contains("predicted_throughput_speedup"));  // one at a time: as before
  EXPECT_TRUE(rows[0].contains("predicted_speedup"));
  std::string batched_file;
  for (size_t i = 1; i < 3; i++) {
    const nlohmann::json& row = rows[i];
    EXPECT_EQ(row["prediction_model"], "batched-loop");
    for (const char* key : {"predicted_throughput_speedup", "predicted_speedup",
                            "predicted_throughput_baseline_tokens_per_s",
                            "predicted_throughput_spec_tokens_per_s", "predicted_tokens_per_round"})
      EXPECT_GT(row.value(key, 0.0), 0.0) << key;
    EXPECT_GT(row.value("predicted_prefill_share", 0.0), 0.0);
    EXPECT_LT(row.value("predicted_prefill_share", 1.0), 1.0);
    EXPECT_NEAR(row["throughput_prediction_error"].get<double>(),
                row["predicted_throughput_speedup"].get<double>() /
                        row["throughput_speedup"].get<double>() -
                    1,
                1e-9);
    EXPECT_NEAR(row["prediction_error"].get<double>(),
                row["predicted_speedup"].get<double>() / row["speedup"].get<double>() - 1, 1e-9);
    EXPECT_FALSE(row.contains("thm38_speedup"));  // Theorem 3.8 prices one request at a time
    EXPECT_EQ(row["batched_cost_profile_source"], "measured");
    batched_file = row["batched_cost_profile_file"].get<std::string>();
  }
  EXPECT_EQ(rows[1]["batched_cost_profile_file"], rows[2]["batched_cost_profile_file"]);
  std::ifstream bf(batched_file);
  ASSERT_TRUE(bf.good()) << batched_file;
  const nlohmann::json profile = nlohmann::json::parse(bf);
  EXPECT_EQ(profile["format"], "speclab-batched-cost-profile");
  EXPECT_EQ(profile["slots"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(profile["queue_prompt_lens"].size(), 5u);
  EXPECT_EQ(profile["target_s"][0].size(), 4u);  // T(b, k) for k = 1..gamma + 1
  EXPECT_FALSE(profile["taken"]["utc"].get<std::string>().empty());

  // The crossover table holds the measured and the predicted curve.
  std::ifstream t(d.file("out/tables.md"));
  std::stringstream ss;
  ss << t.rdbuf();
  EXPECT_NE(ss.str().find("| d | 0.0 | 3 | fixed | - | predicted | "), std::string::npos)
      << ss.str();
  EXPECT_NE(ss.str().find("crossover off by (grid steps)"), std::string::npos);

  // Offline: the profiles of the run, no model loaded, the same figures.
  const CliResult p = run_speclab("predict '" + cfg + "' --out '" + d.file("pred") +
                                  "' --profiles '" + d.file("out") + "'");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::vector<nlohmann::json> cells;
  for (const auto& row : testing_util::read_jsonl(d.file("pred/predictions.jsonl")))
    if (row.value("row_type", "") == "cell") cells.push_back(row);
  ASSERT_EQ(cells.size(), 3u);
  for (size_t i = 1; i < 3; i++) {
    EXPECT_EQ(cells[i]["concurrency"], rows[i]["concurrency"]);
    EXPECT_EQ(cells[i]["batched_cost_profile_source"], "reused");
    EXPECT_NEAR(cells[i]["predicted_throughput_speedup"].get<double>(),
                rows[i]["predicted_throughput_speedup"].get<double>(), 1e-9);
    EXPECT_NEAR(cells[i]["predicted_speedup"].get<double>(),
                rows[i]["predicted_speedup"].get<double>(), 1e-9);
  }

  // A damaged batched profile is refused by name, exit 2, no predictions written.
  {
    std::ofstream out(batched_file, std::ios::trunc);
    nlohmann::json bad = profile;
    bad["slots"] = {1, 3, 2};
    out << bad.dump();
  }
  const CliResult b = run_speclab("predict '" + cfg + "' --out '" + d.file("pred2") +
                                  "' --profiles '" + d.file("out") + "'");
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("batched-cost-"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("slots[2] = 2: expected ascending slot counts"), std::string::npos) << b.err;
  EXPECT_FALSE(std::ifstream(d.file("pred2/predictions.jsonl")).good());
}

// gamma_policy predicted: each cell runs with the gamma its profiles predict best at its number
// of requests in flight (one request at a time: the table's first entry, at least 1); the row
// carries the table; tables.md compares it with the best fixed gamma at each N.
TEST(CliRunConcurrency, PredictedGammaPolicyRunsItsTableAndReportsItsRegret) {
  ScratchDir d;
  const std::string cfg = d.write(
      "conc.yaml", config_text("  concurrency: [1, 2]\n  gamma_policy: [fixed, predicted]\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> rows = testing_util::read_jsonl(d.file("out/results.jsonl"));
  ASSERT_EQ(rows.size(), 4u);
  int predicted_rows = 0;
  for (const auto& row : rows) {
    if (row.value("gamma_policy", "fixed") != "predicted") {
      EXPECT_FALSE(row.contains("predicted_gamma_by_load"));
      continue;
    }
    predicted_rows++;
    ASSERT_TRUE(row.contains("predicted_gamma_by_load")) << row.dump();
    const auto& table = row["predicted_gamma_by_load"];
    ASSERT_EQ(table.size(), 3u);  // b = 0 (unused), 1, 2
    for (size_t b = 1; b < table.size(); b++) {
      EXPECT_GE(table[b].get<int>(), 0);
      EXPECT_LE(table[b].get<int>(), 3);  // up to the cell's gamma
    }
    const int n = row.value("concurrency", 1);
    const int k = table[static_cast<size_t>(n)].get<int>();
    // What the cell drafted per round is what its table says (at least 1 one at a time; at N,
    // the loop's tail runs with fewer requests in flight, hence their entries too).
    const double drafted = row["mean_drafted_per_round"].get<double>();
    if (n == 1) {
      EXPECT_LE(drafted, std::max(1, k) + 1e-9);  // a fixed gamma (cut near the budget's end)
      EXPECT_GT(drafted, 0.5 * std::max(1, k));
    } else {
      int most = 0;
      for (int b = 1; b <= n; b++) most = std::max(most, table[static_cast<size_t>(b)].get<int>());
      EXPECT_LE(drafted, most + 1e-9);
    }
    EXPECT_EQ(row["greedy_outputs_match"], true);  // exact whatever k it chose
  }
  EXPECT_EQ(predicted_rows, 2);
  std::ifstream t(d.file("out/tables.md"));
  std::stringstream ss;
  ss << t.rdbuf();
  EXPECT_NE(ss.str().find("gamma_policy predicted (the gamma the profiles predict best"),
            std::string::npos)
      << ss.str();
  EXPECT_NE(ss.str().find("| best fixed gamma | its speedup | policy gamma | policy speedup | "
                          "regret |"),
            std::string::npos);
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

// generation.backend: cuda with a concurrency sweep: the cells would run on
// CudaBatchedLlamaRunner. Without the CUDA backend in the build (or without a device) the run
// is refused before any cell, with one line naming generation.backend.
TEST(CliRunConcurrency, CudaBackendWithoutTheBackendOrADeviceIsRefusedBeforeAnyCell) {
  ScratchDir d;
  const std::string cfg = d.write("conc.yaml", config_text("  concurrency: [1, 2]\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --set generation.backend=cuda --out '" +
                                  d.file("out") + "' --no-plots");
#ifndef SPECLAB_HAVE_CUDA
  const std::string expected = "'cuda' requested but this build has no CUDA backend";
#else
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  const std::string expected = "no CUDA device";
#endif
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const size_t last = r.err.rfind('\n', r.err.size() - 2);
  const std::string last_line = r.err.substr(last == std::string::npos ? 0 : last + 1);
  EXPECT_NE(last_line.find(expected), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(d.file("out/results.jsonl")).good());
}

}  // namespace
}  // namespace speclab
