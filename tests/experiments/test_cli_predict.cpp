// `speclab predict`: every cell of a sweep predicted from cost and acceptance profiles without
// running the speculative decoder; profiles reused offline; cost profiles imported from CSV
// and llama-bench JSON; bad profile files exit 2 with one line. And `speclab run`: the pair's
// acceptance (alpha_profile) is one number across the gamma cells of a drafter and setting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

using testing_util::read_jsonl;

std::string small_config(ScratchDir& d, const std::string& gammas) {
  const std::string src = SPECLAB_SOURCE_DIR;
  return d.write(
      "small.yaml",
      "name: small\nquestion: \"q\"\ntarget: " + src +
          "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + src +
          "/models/zoo/tiny-draft-0.5m\n  lookup: \"lookup:n=3\"\nprompts:\n  file: " + src +
          "/configs/prompts/tiny-in-domain.jsonl\n  limit: 3\ngeneration:\n"
          "  max_new_tokens: 16\n  warmup: 0\n  threads: 1\n  ctx: 128\n"
          "  ignore_eos: true\nmeasure:\n  bootstrap_resamples: 50\nsweep:\n"
          "  drafter: [d, lookup]\n  gamma: " +
          gammas + "\n  temperature: [0, 1]\n");
}

TEST(CliPredict, DefaultConfigRunsNoSpeculativeRoundAndPredictsTheRunsCells) {
  ScratchDir d;
  const std::string cfg = std::string(SPECLAB_SOURCE_DIR) + "/configs/default.yaml";
  const CliResult r = run_speclab("predict '" + cfg + "' --out '" + d.file("P") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_jsonl(d.file("P/predictions.jsonl"));
  std::set<std::string> predicted;
  std::set<int> gammas;
  int groups = 0;
  for (const auto& row : rows) {
    if (row["row_type"] == "group") {
      groups++;
      EXPECT_TRUE(row.contains("predicted_best_gamma"));
      continue;
    }
    EXPECT_EQ(row["speculative_generations_run"], 0) << "predict ran the speculative decoder";
    EXPECT_GT(row["predicted_speedup"].get<double>(), 0);
    EXPECT_GE(row["predicted_tokens_per_round"].get<double>(), 1.0);
    predicted.insert(row["cell_id"].get<std::string>());
    gammas.insert(row["gamma"].get<int>());
  }
  // The cells `speclab run` measures are sweep_expand's, in the same order and ids.
  std::set<std::string> run_ids;
  for (const Cell& c : sweep_expand(experiment_config_load(cfg, {}))) run_ids.insert(c.cell_id);
  EXPECT_EQ(predicted, run_ids);
  EXPECT_EQ(groups, 6);  // 3 drafters x 2 temperatures
  for (const auto& row : rows)
    if (row["row_type"] == "group") {
      EXPECT_TRUE(gammas.count(row["predicted_best_gamma"].get<int>()));
    }
  EXPECT_TRUE(testing_util::file_exists(d.file("P/profiles/index.json")));
}

TEST(CliPredict, ProfilesAreReusedOfflineForOtherGammasAndRefusedWhenTooShallow) {
  ScratchDir d;
  const std::string cfg = small_config(d, "[1, 4]");
  ASSERT_EQ(run_speclab("predict '" + cfg + "' --out '" + d.file("A") + "'").exit_code, 0);
  // The same cells from the saved profiles: identical predictions (the recursion is exact).
  const CliResult again = run_speclab("predict '" + cfg + "' --out '" + d.file("B") +
                                      "' --profiles '" + d.file("A") + "'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto a = read_jsonl(d.file("A/predictions.jsonl"));
  const auto b = read_jsonl(d.file("B/predictions.jsonl"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++)
    if (a[i]["row_type"] == "cell") {
      EXPECT_DOUBLE_EQ(a[i]["predicted_speedup"].get<double>(),
                       b[i]["predicted_speedup"].get<double>());
    }
  // Another gamma within the profiled depth: predicted offline.
  const CliResult g3 = run_speclab("predict '" + cfg + "' --set 'sweep.gamma=[3]' --out '" +
                                   d.file("C") + "' --profiles '" + d.file("A") + "'");
  EXPECT_EQ(g3.exit_code, 0) << g3.err;
  // Deeper than the rollouts: refused with one line naming the profile.
  const CliResult deep = run_speclab("predict '" + cfg + "' --set 'sweep.gamma=[8]' --out '" +
                                     d.file("D") + "' --profiles '" + d.file("A") + "'");
  EXPECT_EQ(deep.exit_code, 2);
  EXPECT_NE(deep.err.find("rollouts of depth 4"), std::string::npos) << deep.err;
  // A directory without profiles.
  const CliResult none = run_speclab("predict '" + cfg + "' --out '" + d.file("E") +
                                     "' --profiles '" + d.file("nothing") + "'");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no such file"), std::string::npos) << none.err;
}

// measure.acceptance_stride: a strided profile has a file of its own; a directory profiled at
// one stride is never read for a config asking another, and a file recording another stride
// under the expected name is refused; rows state the stride and the speedup's interval.
TEST(CliPredict, AnAcceptanceProfileOfAnotherStrideIsNeverReused) {
  ScratchDir d;
  const std::string cfg = small_config(d, "[1, 4]");
  ASSERT_EQ(run_speclab("predict '" + cfg + "' --out '" + d.file("A") + "'").exit_code, 0);
  const std::string s2 = " --set measure.acceptance_stride=2";
  const CliResult other = run_speclab("predict '" + cfg + "'" + s2 + " --out '" + d.file("B") +
                                      "' --profiles '" + d.file("A") + "'");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("-stride2.json"), std::string::npos) << other.err;
  const CliResult strided =
      run_speclab("predict '" + cfg + "'" + s2 + " --out '" + d.file("S") + "'");
  ASSERT_EQ(strided.exit_code, 0) << strided.err;
  for (const auto& row : read_jsonl(d.file("S/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    EXPECT_EQ(row["acceptance_profile_stride"], 2);
    ASSERT_TRUE(row.contains("predicted_speedup_ci_lo")) << row.dump();
    EXPECT_LE(row["predicted_speedup_ci_lo"].get<double>(), row["predicted_speedup"].get<double>());
    EXPECT_GE(row["predicted_speedup_ci_hi"].get<double>(), row["predicted_speedup"].get<double>());
    EXPECT_LE(row["predicted_tokens_per_round_ci_lo"].get<double>(),
              row["predicted_tokens_per_round"].get<double>());
    EXPECT_GE(row["predicted_tokens_per_round_ci_hi"].get<double>(),
              row["predicted_tokens_per_round"].get<double>());
    // The range the cost profile's own timing spread allows brackets the prediction.
    ASSERT_TRUE(row.contains("predicted_speedup_cost_lo")) << row.dump();
    EXPECT_LE(row["predicted_speedup_cost_lo"].get<double>(),
              row["predicted_speedup"].get<double>());
    EXPECT_GE(row["predicted_speedup_cost_hi"].get<double>(),
              row["predicted_speedup"].get<double>());
  }
  for (const auto& row : read_jsonl(d.file("A/predictions.jsonl")))
    if (row["row_type"] == "cell") {
      EXPECT_FALSE(row.contains("acceptance_profile_stride"));
    }
  // A stride-2 file put under the full profile's name: refused, naming the file and both strides.
  std::ifstream index_in(d.file("S/profiles/index.json"));
  const nlohmann::json index = nlohmann::json::parse(index_in);
  const std::string g = index.begin().key();
  const std::string full = d.file("A/profiles/acceptance-" + g + ".json");
  ASSERT_TRUE(testing_util::file_exists(full));
  std::filesystem::copy_file(d.file("S/profiles/acceptance-" + g + "-stride2.json"), full,
                             std::filesystem::copy_options::overwrite_existing);
  const CliResult doctored = run_speclab("predict '" + cfg + "' --out '" + d.file("C") +
                                         "' --profiles '" + d.file("A") + "'");
  EXPECT_EQ(doctored.exit_code, 2);
  EXPECT_NE(doctored.err.find(full + ": measured at acceptance stride 2, the config asks for "
                                     "measure.acceptance_stride 1"),
            std::string::npos)
      << doctored.err;
  // A bad stride: one line, exit 2.
  const CliResult bad = run_speclab(
      "predict '" + cfg + "' --set measure.acceptance_stride=0 --out '" + d.file("D") + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("measure.acceptance_stride: expected an integer in 1..1000000, got 0"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(CliPredict, ImportsCostProfilesFromCsvAndLlamaBench) {
  ScratchDir d;
  const std::string cfg = small_config(d, "[1, 2]");
  // T(k) = 10 ms flat, drafts 1 ms per token, no host: predicted speedup follows Theorem 3.8
  // shape; what matters here is that the figures come from the file.
  const std::string csv = d.write("cost.csv",
                                  "k,target_s,draft_round_s,host_s\n1,0.010,0.001,0\n"
                                  "2,0.010,0.002,0\n3,0.010,0.003,0\n");
  const CliResult r =
      run_speclab("predict '" + cfg + "' --out '" + d.file("A") + "' --cost-profile '" + csv + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& row : read_jsonl(d.file("A/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    EXPECT_EQ(row["cost_profile_source"], "csv");
    EXPECT_NEAR(row["c_profile"].get<double>(), 0.1, 1e-12);
    EXPECT_NEAR(row["predicted_baseline_s_per_token"].get<double>(), 0.010, 1e-12);
  }
  // llama-bench -o json: a 3B target (pp1..pp3) and a 1B draft (tg).
  const std::string bench = d.write(
      "bench.json",
      R"([{"model_filename":"t.gguf","model_n_params":3000000000,"n_prompt":1,"n_gen":0,"avg_ns":20000000},
          {"model_filename":"t.gguf","model_n_params":3000000000,"n_prompt":2,"n_gen":0,"avg_ns":21000000},
          {"model_filename":"t.gguf","model_n_params":3000000000,"n_prompt":3,"n_gen":0,"avg_ns":22000000},
          {"model_filename":"d.gguf","model_n_params":1000000000,"n_prompt":0,"n_gen":128,"avg_ns":1024000000}])");
  const CliResult lb = run_speclab("predict '" + cfg + "' --out '" + d.file("B") +
                                   "' --cost-profile '" + bench + "'");
  ASSERT_EQ(lb.exit_code, 0) << lb.err;
  for (const auto& row : read_jsonl(d.file("B/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    EXPECT_EQ(row["cost_profile_source"], "llama-bench");
    EXPECT_NEAR(row["c_profile"].get<double>(), 0.008 / 0.020, 1e-9);
  }
  // With --profiles: the costs from the file, the acceptance from A's profiles (no model is
  // loaded), so each cell's tokens per round is A's and its c the file's.
  const CliResult both =
      run_speclab("predict '" + cfg + "' --out '" + d.file("C") + "' --profiles '" + d.file("A") +
                  "' --cost-profile '" + bench + "'");
  ASSERT_EQ(both.exit_code, 0) << both.err;
  std::map<std::string, double> tau_a;
  for (const auto& row : read_jsonl(d.file("A/predictions.jsonl")))
    if (row["row_type"] == "cell")
      tau_a[row["cell_id"]] = row["predicted_tokens_per_round"].get<double>();
  int cells = 0;
  for (const auto& row : read_jsonl(d.file("C/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    cells++;
    EXPECT_EQ(row["cost_profile_source"], "llama-bench");
    EXPECT_NEAR(row["c_profile"].get<double>(), 0.008 / 0.020, 1e-9);
    ASSERT_TRUE(tau_a.count(row["cell_id"])) << row["cell_id"];
    EXPECT_EQ(row["predicted_tokens_per_round"].get<double>(), tau_a[row["cell_id"]]);
  }
  EXPECT_EQ(cells, static_cast<int>(tau_a.size()));
  EXPECT_GT(cells, 0);
}

TEST(CliPredict, BadCostProfilesExit2WithOneLine) {
  ScratchDir d;
  const std::string cfg = small_config(d, "[1, 2]");
  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {"notnum.csv", {"k,target_s\n1,abc\n", "notnum.csv:2: 'abc' is not a number"}},
      {"order.csv", {"k,target_s\n2,0.01\n", "expected 1"}},
      {"header.csv", {"x,y\n1,2\n", "expected the header"}},
      {"short.csv", {"k,target_s\n1,0.01\n", "short.csv: T(k) up to k = 1"}},
      {"one-model.json",
       {R"([{"model_filename":"t","model_n_params":1,"n_prompt":1,"n_gen":0,"avg_ns":5}])",
        "exactly two models"}},
      {"profile.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[-1]})", "draft_round_s"}},
      {"broken.json", {"{\"format\":", "not valid JSON"}},
      {"tree-depth.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"draft_tree_s":{"3x2":[0,0.001]}})",
        "tree-depth.json: draft_tree_s.3x2: expected 3 seconds (depth 0..2, the first 0), got 2"}},
      {"tree-shape.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"draft_tree_s":{"3y2":[0,0.001,0.002]}})",
        "tree-shape.json: draft_tree_s: key '3y2'"}},
      {"tree-negative.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"draft_tree_s":{"2x2":[0,-1,0.002]}})",
        "tree-negative.json: draft_tree_s.2x2[1]: expected finite seconds >= 0"}},
      {"behind-negative.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"draft_behind_s":[0,0.001,-1]})",
        "behind-negative.json: draft_behind_s[2]: expected finite seconds >= 0"}},
      {"behind-first.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"draft_behind_s":[0.001]})",
        "behind-first.json: draft_behind_s: expected [0, s(1 behind), ...]"}},
      {"spread.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"spread":{"reps":3,"target_s":{"min":[0.01],)"
        R"("median":[0.009],"max":[0.02]}}})",
        "spread.json: spread.target_s[0]: expected finite seconds 0 <= min <= median <= max"}},
      {"device-length.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01,0.02],)"
        R"("draft_round_s":[0],"draft_step_s":0,"host_round_s":[0,0],"verify_device_s":[0.01]})",
        "device-length.json: verify_device_s has 1 entries, expected one per T(k) (2) or none"}},
      {"device-negative.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"verify_device_s":[-0.01]})",
        "device-negative.json: verify_device_s[0]: expected finite seconds >= 0"}},
      // Seen: a version or format of another type was an internal error (exit 3).
      {"version-text.json",
       {R"({"format":"speclab-cost-profile","version":"1","target_s":[0.01],"draft_round_s":[0]})",
        "version-text.json: version: expected 1"}},
      {"format-number.json",
       {R"({"format":5,"version":1,"target_s":[0.01],"draft_round_s":[0]})",
        "format-number.json: "}},
      {"device-text.json",
       {R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01],"draft_round_s":[0],)"
        R"("draft_step_s":0,"host_round_s":[0],"verify_device_s":"fast"})",
        "device-text.json: verify_device_s"}},
  };
  for (const auto& [name, c] : cases) {
    const std::string f = d.write(name, c.first);
    const CliResult r =
        run_speclab("predict '" + cfg + "' --out '" + d.file("o") + "' --cost-profile '" + f + "'");
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos) << name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << name << ": " << r.err;
    // Seen: a profile too short for the setting (found after the profiles were taken) left
    // o/profiles behind. Expected: a refused predict leaves nothing.
    EXPECT_FALSE(std::filesystem::exists(d.file("o"))) << name;
  }
  const CliResult dir =
      run_speclab("predict '" + cfg + "' --cost-profile '" + d.path.string() + "'");
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_NE(dir.err.find("is a directory, expected a regular file"), std::string::npos) << dir.err;
}

TEST(CliRunPrediction, AlphaProfileIsOneNumberAcrossGammaCellsWithItsInterval) {
  ScratchDir d;
  const std::string cfg = small_config(d, "[1, 2, 4]");
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("R") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::set<double>> alpha;  // drafter/T -> alpha_profile values
  for (const auto& row : read_jsonl(d.file("R/results.jsonl"))) {
    const std::string key = row["drafter"].get<std::string>() + "/" + row["temperature"].dump();
    alpha[key].insert(row["alpha_profile"].get<double>());
    EXPECT_LE(row["alpha_profile_ci_lo"].get<double>(), row["alpha_profile"].get<double>());
    EXPECT_GE(row["alpha_profile_ci_hi"].get<double>(), row["alpha_profile"].get<double>());
    for (const char* k : {"predicted_speedup", "prediction_error",   "thm38_speedup",
                          "c_profile",         "alpha_empirical",    "draft_s",
                          "verify_s",          "sample_s",           "flags",
                          "run_utc",           "run_load_before",    "run_load_after",
                          "run_mem_free_gb",   "run_git_describe",   "run_cpu_family",
                          "run_cpu_model",     "run_cpu_model_name", "run_build_type",
                          "run_matmul_isa",    "run_cuda_graphs",    "repeated_4gram_share"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_EQ(row["run_cuda_graphs"], "none");  // a cpu run
    EXPECT_FALSE(row.contains("predicted_speedup_refined"));
    // Greedy: the profile walks the very text the decoder emits, so tokens per round agree.
    if (row["temperature"] == 0) {
      EXPECT_NEAR(row["predicted_tokens_per_round"].get<double>(), row["tau"].get<double>(), 1e-9)
          << row["drafter"] << " gamma " << row["gamma"];
    }
    // Three prompts: the interval is flagged as resting on too few.
    EXPECT_NE(row["flags"].dump().find("few_prompts"), std::string::npos);
  }
  EXPECT_EQ(alpha.size(), 4u);
  for (const auto& [k, v] : alpha) EXPECT_EQ(v.size(), 1u) << k;
  // The same profiles as `speclab predict` writes: predict from the run's profiles offline.
  const CliResult p = run_speclab("predict '" + cfg + "' --out '" + d.file("P") + "' --profiles '" +
                                  d.file("R") + "'");
  EXPECT_EQ(p.exit_code, 0) << p.err;
}

// Top-k trees at T = 0: the accepted path is the target's greedy text, so a tree level passes
// exactly when the target's token is among the drafter's b likeliest at the text's prefix
// (top_mass), and the predicted tokens per round equal the measured ones, as for chains. The
// retired pricing (siblings as independent tries: 1 - (1 - r)^b with r 0 or 1) gave the
// chain's tokens per round, which the case shows differ from the tree's.
TEST(CliRunPrediction, TreesAtTemperatureZeroPredictTheMeasuredTokensPerRound) {
  ScratchDir d;
  const std::string src = SPECLAB_SOURCE_DIR;
  const std::string cfg =
      d.write("tree.yaml", "name: tree\nquestion: \"q\"\ntarget: " + src +
                               "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + src +
                               "/models/zoo/tiny-draft-0.5m\nprompts:\n  file: " + src +
                               "/configs/prompts/tiny-in-domain.jsonl\n  limit: 3\ngeneration:\n"
                               "  max_new_tokens: 24\n  warmup: 0\n  threads: 1\n  ctx: 128\n"
                               "  ignore_eos: true\nmeasure:\n  bootstrap_resamples: 50\n"
                               // The run's predictions must be predict's from the same
                               // files: no retake before a cell.
                               "  cost_profile_recheck: 0\nsweep:\n"
                               "  drafter: [d]\n  gamma: [3]\n  temperature: [0, 1]\n"
                               "  tree: [\"off\", \"3x2x1\", \"2x2x2\", \"2x2x2:sample\"]\n");
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("R") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> chain_tau;  // temperature -> the chain's measured tau
  std::vector<nlohmann::json> trees;
  for (const auto& row : read_jsonl(d.file("R/results.jsonl"))) {
    const std::string tree =
        row.contains("tree") && row["tree"].is_string() ? row["tree"].get<std::string>() : "";
    if (tree.empty() || tree == "off")
      chain_tau[row["temperature"].dump()] = row["tau"].get<double>();
    else
      trees.push_back(row);
  }
  ASSERT_EQ(trees.size(), 6u);
  ASSERT_EQ(chain_tau.size(), 2u);
  int greedy_topk = 0, differs_from_chain = 0, sampled_hot = 0;
  for (const auto& row : trees) {
    const std::string tree = row["tree"].get<std::string>();
    const bool sampled_tree = tree.find("sample") != std::string::npos;
    EXPECT_EQ(row["prediction_model"], sampled_tree ? "tree-sampled-b" : "tree-top-b") << tree;
    if (row["temperature"] == 0 && !sampled_tree) {
      greedy_topk++;
      EXPECT_NEAR(row["predicted_tokens_per_round"].get<double>(), row["tau"].get<double>(), 1e-9)
          << tree;
      differs_from_chain += std::abs(row["tau"].get<double>() - chain_tau["0"]) > 0.01 ? 1 : 0;
    }
    // Sampled children of a greedy drafter are all its argmax: the decoder verifies the chain
    // of the same depth (one node per level), and the prediction prices exactly that.
    if (row["temperature"] == 0 && sampled_tree) {
      EXPECT_LE(row["mean_tree_nodes_per_round"].get<double>(), 3.0);  // depth 3, cut near the end
      EXPECT_DOUBLE_EQ(row["mean_tree_nodes_per_round"].get<double>(),
                       row["predicted_drafted_per_round"].get<double>());
      EXPECT_NEAR(row["predicted_tokens_per_round"].get<double>(), row["tau"].get<double>(), 1e-9);
    }
    // Sampled children at T = 1: repeated draws get no node, so the decoder verifies fewer
    // than the shape's 14 nodes; the prediction counts the expected distinct draws
    // (sample_distinct) and lands nearer the measured count than the full width does.
    if (row["temperature"] == 1 && sampled_tree) {
      sampled_hot++;
      const double measured = row["mean_tree_nodes_per_round"].get<double>();
      const double predicted = row["predicted_tree_nodes_per_round"].get<double>();
      EXPECT_LT(measured, 13.5);
      EXPECT_LT(predicted, 13.5);
      EXPECT_LT(std::abs(predicted - measured), 0.1 * measured) << predicted << " " << measured;
      EXPECT_LT(std::abs(predicted - measured), std::abs(14.0 - measured));
    }
  }
  EXPECT_EQ(sampled_hot, 1);
  EXPECT_EQ(greedy_topk, 2);
  EXPECT_GT(differs_from_chain, 0) << "every tree measured the chain's tau: the case tests nothing";
  // The top-b mass and the trees' drafting times survive the profile files: predicting from
  // them gives the same figures.
  const CliResult p = run_speclab("predict '" + cfg + "' --out '" + d.file("P") + "' --profiles '" +
                                  d.file("R") + "'");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::map<std::string, nlohmann::json> offline;
  for (const auto& row : read_jsonl(d.file("P/predictions.jsonl")))
    if (row["row_type"] == "cell") offline[row["cell_id"].get<std::string>()] = row;
  for (const auto& row : trees) {
    const nlohmann::json& o = offline.at(row["cell_id"].get<std::string>());
    EXPECT_EQ(o["prediction_model"], row["prediction_model"]);
    EXPECT_DOUBLE_EQ(o["predicted_tokens_per_round"].get<double>(),
                     row["predicted_tokens_per_round"].get<double>());
    EXPECT_DOUBLE_EQ(o["predicted_speedup"].get<double>(), row["predicted_speedup"].get<double>());
  }
  // Each tree's drafting was timed for its own shape, one entry per depth.
  std::ifstream cost_file(
      d.file("R/profiles/cost-" + trees[0]["prediction_group"].get<std::string>() + ".json"));
  const nlohmann::json cost = nlohmann::json::parse(cost_file);
  ASSERT_TRUE(cost.contains("draft_tree_s")) << cost.dump();
  EXPECT_EQ(cost["draft_tree_s"].size(), 3u);
  EXPECT_EQ(cost["draft_tree_s"]["3x2x1:topk"].size(), 4u);
  EXPECT_EQ(cost["spread"]["draft_tree_s"]["2x2x2:sample"]["median"].size(), 4u);
  // The proposal n behind, n = 1..deepest tree + 1 (a tree round forgets its tree).
  ASSERT_TRUE(cost.contains("draft_behind_s"));
  EXPECT_EQ(cost["draft_behind_s"].size(), 5u);
  EXPECT_EQ(cost["draft_behind_s"][0], 0.0);
}

}  // namespace
}  // namespace speclab

namespace speclab {
namespace {

// A drafter that is the target itself proposes exactly the target's law: every rollout token
// passes (r = 1) and beta = sum_x min(p, p) = 1 at every position, at any temperature, so the
// profile says alpha 1 and every round yields gamma + 1 tokens (except where the request's
// budget cuts it). A profile that mixed up p and q rows, positions or the lenience would not.
TEST(CliPredict, SelfDraftingProfilesAcceptEverything) {
  ScratchDir d;
  const std::string src = SPECLAB_SOURCE_DIR;
  const std::string cfg = d.write(
      "self.yaml", "name: self\nquestion: \"q\"\ntarget: " + src +
                       "/models/zoo/tiny-target-5m\ndrafters:\n  same: " + src +
                       "/models/zoo/tiny-target-5m\nprompts:\n  file: " + src +
                       "/configs/prompts/tiny-in-domain.jsonl\n  limit: 2\ngeneration:\n"
                       "  max_new_tokens: 13\n  threads: 1\n  ctx: 128\n  ignore_eos: true\n"
                       "sweep:\n  drafter: [same]\n  gamma: [3]\n  temperature: [0, 1]\n");
  const CliResult r = run_speclab("predict '" + cfg + "' --out '" + d.file("P") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int cells = 0;
  for (const auto& row : read_jsonl(d.file("P/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    cells++;
    EXPECT_NEAR(row["alpha_profile"].get<double>(), 1.0, 1e-5) << row["temperature"];
    for (const auto& a : row["acceptance_profile_by_position"])
      EXPECT_NEAR(a.get<double>(), 1.0, 1e-5) << row["temperature"];
    // 13 tokens with gamma 3: rounds of 4, 4, 4 and a last one of 1 (budget) = 13 / 4.
    EXPECT_NEAR(row["predicted_tokens_per_round"].get<double>(), 13.0 / 4.0, 1e-9);
  }
  EXPECT_EQ(cells, 2);
}

}  // namespace
}  // namespace speclab
