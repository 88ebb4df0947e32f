// Cost profile files (experiments/predict/profile_io.h, docs/prediction.md): a measured profile
// keeps the spread of every timed figure (min <= median <= max over its repetitions) and when,
// where and on what it was taken (UTC, load before and after, commit, machine, the sha256 of the
// weights it timed); a row says whether its profile was measured in this run or reused, and
// which file it is; a profile file written before any of this was recorded still reads; and
// `speclab run --resume` never overwrites a profile that earlier rows came from.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/predict/cell_prediction.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_runner.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;
namespace fs = std::filesystem;

using testing_util::read_bytes;

using testing_util::read_jsonl;

// Drops the last row of a results file, as if the run had been killed before writing it.
void drop_last_row(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  in.close();
  ASSERT_FALSE(lines.empty());
  lines.pop_back();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

// Drops the run's last row and resumes it: that cell is predicted and measured again.
CliResult resume_last_cell(const std::string& cfg, const std::string& out) {
  drop_last_row(out + "/results.jsonl");
  return run_speclab("run '" + cfg + "' --out '" + out + "' --resume --no-plots");
}

// Two cells (gamma 1 and 2) of one profile group: one cost profile, one acceptance profile.
// The check before each cell is off unless asked for: these tests are about the files a run
// writes and reads, and on a loaded test machine a check may retake a profile into another
// file (the check's own tests: test_cost_profile_check.cpp and the two below that ask).
std::string tiny_config(ScratchDir& d, const std::string& recheck = "0") {
  const std::string src = SPECLAB_SOURCE_DIR;
  return d.write("tiny.yaml", "name: tiny\nquestion: \"q\"\ntarget: " + src +
                                  "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + src +
                                  "/models/zoo/tiny-draft-0.5m\nprompts:\n  file: " + src +
                                  "/configs/prompts/tiny-in-domain.jsonl\n  limit: 2\n"
                                  "generation:\n  max_new_tokens: 16\n  warmup: 0\n"
                                  "  threads: 1\n  ctx: 128\n  ignore_eos: true\n"
                                  "measure:\n  bootstrap_resamples: 20\n  cost_profile_recheck: " +
                                  recheck +
                                  "\n"
                                  "sweep:\n  drafter: [d]\n  gamma: [1, 2]\n  temperature: [0]\n");
}

// min <= median <= max entry by entry, n entries; returns the medians.
std::vector<double> expect_ordered_spread(const nlohmann::json& spread, const std::string& key,
                                          size_t n) {
  SCOPED_TRACE(key);
  EXPECT_TRUE(spread.contains(key));
  if (!spread.contains(key)) return {};
  const auto mn = spread[key]["min"].get<std::vector<double>>();
  const auto med = spread[key]["median"].get<std::vector<double>>();
  const auto mx = spread[key]["max"].get<std::vector<double>>();
  EXPECT_TRUE(spread[key].contains("mean"));
  const auto mean = spread[key].value("mean", std::vector<double>{});
  EXPECT_EQ(mn.size(), n);
  EXPECT_EQ(med.size(), n);
  EXPECT_EQ(mx.size(), n);
  EXPECT_EQ(mean.size(), n);
  for (size_t i = 0; i < n && i < mn.size() && i < med.size() && i < mx.size(); i++) {
    EXPECT_GE(mn[i], 0.0) << i;
    EXPECT_LE(mn[i], med[i]) << i;
    EXPECT_LE(med[i], mx[i]) << i;
    if (i < mean.size()) {
      EXPECT_LE(mn[i], mean[i]) << i;
      EXPECT_LE(mean[i], mx[i]) << i;
    }
  }
  return med;
}

TEST(CostProfileFile, MeasuredProfileKeepsItsSpreadAndWhereItWasTakenAndReusedRowsSaySo) {
  ScratchDir d;
  const std::string cfg = tiny_config(d);
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("R") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_jsonl(d.file("R/results.jsonl"));
  ASSERT_EQ(rows.size(), 2u);
  const std::string cost_file =
      d.file("R/profiles/cost-" + rows[0]["prediction_group"].get<std::string>() + ".json");
  for (const auto& row : rows) {
    EXPECT_EQ(row["cost_profile_source"], "measured");
    EXPECT_EQ(row["cost_profile_file"], cost_file);
  }
  const nlohmann::json p = nlohmann::json::parse(read_bytes(cost_file));

  // The spread: every timed figure, ordered, over the repetitions; the figure is its median.
  ASSERT_TRUE(p.contains("spread")) << p.dump();
  const nlohmann::json& s = p["spread"];
  EXPECT_EQ(s["reps"], 15);
  const size_t K = p["target_s"].size(), G1 = p["draft_round_s"].size();
  EXPECT_EQ(expect_ordered_spread(s, "target_s", K), p["target_s"].get<std::vector<double>>());
  EXPECT_EQ(expect_ordered_spread(s, "draft_round_s", G1),
            p["draft_round_s"].get<std::vector<double>>());
  EXPECT_EQ(expect_ordered_spread(s, "host_round_s", K),
            p["host_round_s"].get<std::vector<double>>());
  for (const char* part : {"draft_one_behind_s", "draft_two_behind_s", "draft_first_call_s"})
    expect_ordered_spread(s, part, 1);
  EXPECT_EQ(expect_ordered_spread(s, "baseline_step_s", 1),
            std::vector<double>{p["baseline_step_s"].get<double>()});
  EXPECT_EQ(rows[0]["cost_profile_baseline_step_s"], p["baseline_step_s"]);
  // The mean-cost diagnostic: every figure between its fastest and slowest repetition, so the
  // speedup between the cost range's ends; its error against the measured speedup beside it.
  for (const auto& row : rows) {
    ASSERT_TRUE(row.contains("predicted_speedup_mean_costs")) << row.dump();
    const double m = row["predicted_speedup_mean_costs"].get<double>();
    EXPECT_GE(m, row["predicted_speedup_cost_lo"].get<double>());
    EXPECT_LE(m, row["predicted_speedup_cost_hi"].get<double>());
    EXPECT_NEAR(row["prediction_error_mean_costs"].get<double>(),
                m / row["speedup"].get<double>() - 1, 1e-9);
  }
  // The medians are not all the minima: the spread is measured, not copied.
  EXPECT_NE(s["target_s"]["median"], s["target_s"]["min"]);

  // When, under what load, by which commit on which machine, of which weights.
  ASSERT_TRUE(p.contains("taken")) << p.dump();
  const nlohmann::json& t = p["taken"];
  EXPECT_TRUE(std::regex_match(t["utc"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << t["utc"];
  EXPECT_LE(t["utc"].get<std::string>(), rows[0]["run_utc"].get<std::string>());
  EXPECT_EQ(rows[0]["cost_profile_taken_utc"], t["utc"]);
  EXPECT_TRUE(t["load_before"].is_number());
  EXPECT_TRUE(t["load_after"].is_number());
  EXPECT_EQ(t["git_commit"], rows[0]["git_commit"]);
  EXPECT_EQ(t["git_describe"], rows[0]["run_git_describe"]);
  EXPECT_EQ(t["machine"]["cpu_model"], rows[0]["machine_cpu_model"]);
  EXPECT_EQ(t["machine"]["cores"], rows[0]["machine_cores"]);
  EXPECT_EQ(t["machine"]["threads"], rows[0]["machine_threads"]);
  EXPECT_EQ(t["machine"]["hostname"], rows[0]["machine_hostname"]);
  EXPECT_EQ(t["machine"]["matmul_isa"], rows[0]["run_matmul_isa"]);
  EXPECT_EQ(t["target_sha256"], rows[0]["target_sha256"]);
  EXPECT_EQ(t["draft_sha256"], rows[0]["draft_sha256"]);
  EXPECT_EQ(t["target_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(t["draft_sha256"].get<std::string>().size(), 64u);

  // Predicted offline from those files: the rows say the profile was reused, and which.
  const CliResult again = run_speclab("predict '" + cfg + "' --out '" + d.file("P") +
                                      "' --profiles '" + d.file("R") + "'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& row : read_jsonl(d.file("P/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    EXPECT_EQ(row["cost_profile_source"], "reused");
    EXPECT_EQ(row["cost_profile_file"], cost_file);
    EXPECT_EQ(row["cost_profile_taken_utc"], t["utc"]);
  }

  // The same figures in a file of the format before spreads and circumstances were kept:
  // read, reused, the same predictions, no time of measurement claimed.
  fs::create_directories(d.file("O/profiles"));
  for (const auto& e : fs::directory_iterator(d.file("R/profiles")))
    fs::copy_file(e.path(), d.file("O/profiles/" + e.path().filename().string()));
  nlohmann::json old = p;
  old.erase("spread");
  old.erase("taken");
  const std::string old_file =
      d.file("O/profiles/cost-" + rows[0]["prediction_group"].get<std::string>() + ".json");
  std::ofstream(old_file, std::ios::trunc) << old.dump() << "\n";
  const CliResult from_old = run_speclab("predict '" + cfg + "' --out '" + d.file("Q") +
                                         "' --profiles '" + d.file("O") + "'");
  ASSERT_EQ(from_old.exit_code, 0) << from_old.err;
  const auto p_rows = read_jsonl(d.file("P/predictions.jsonl"));
  const auto q_rows = read_jsonl(d.file("Q/predictions.jsonl"));
  ASSERT_EQ(p_rows.size(), q_rows.size());
  for (size_t i = 0; i < q_rows.size(); i++) {
    if (q_rows[i]["row_type"] != "cell") continue;
    EXPECT_EQ(q_rows[i]["cost_profile_source"], "reused");
    EXPECT_EQ(q_rows[i]["cost_profile_file"], old_file);
    EXPECT_FALSE(q_rows[i].contains("cost_profile_taken_utc"));
    EXPECT_EQ(q_rows[i]["predicted_speedup"], p_rows[i]["predicted_speedup"]);
  }
}

// A profile file as speclab wrote it before the spread and the circumstances were recorded.
TEST(CostProfileFile, OldFormatReadsWithoutSpreadOrCircumstances) {
  const nlohmann::json old = nlohmann::json::parse(
      R"({"c":0.12447774929013272,"context_len":91,"draft_catchup_s":1.4627999999999996e-05,)"
      R"("draft_prefill_s":0.0008714980000000001,"draft_round_s":[0.0,0.000101179,0.000194093,)"
      R"(0.000291164],"draft_step_s":0.000101179,"format":"speclab-cost-profile",)"
      R"("host_round_s":[7.023e-06,1.7343e-05,2.6739e-05,3.733e-05],"source":"measured",)"
      R"("target_s":[0.000812828,0.001065059,0.001463834,0.001844986],"version":1})");
  const CostProfileRecord r = cost_profile_record_from_json(old, "old.json");
  EXPECT_EQ(r.cost.source, "reused");
  EXPECT_EQ(r.cost.origin, "old.json");
  EXPECT_EQ(r.cost.context_len, 91);
  EXPECT_EQ(r.cost.target_s,
            (std::vector<double>{0.000812828, 0.001065059, 0.001463834, 0.001844986}));
  EXPECT_DOUBLE_EQ(r.cost.draft_step_s, 0.000101179);
  EXPECT_EQ(r.spread.reps, 0);
  EXPECT_TRUE(r.spread.target_s.min.empty());
  // No plain step timed apart: T(1) stands in for it.
  EXPECT_EQ(r.cost.baseline_step_s, 0.0);
  EXPECT_EQ(r.cost.plain_step_s(), 0.000812828);
  EXPECT_EQ(r.taken.utc, "");
  EXPECT_EQ(r.taken.load_before, -1);
  // Written again, it stays in the old shape: no spread or circumstances are invented.
  const nlohmann::json back = cost_profile_to_json(r);
  EXPECT_FALSE(back.contains("spread"));
  EXPECT_FALSE(back.contains("taken"));
  EXPECT_FALSE(back.contains("baseline_step_s"));
  EXPECT_EQ(back["target_s"], old["target_s"]);
}

TEST(CostProfileFile, SpreadAndCircumstancesSurviveTheFile) {
  CostProfileRecord r;
  r.cost.source = "measured";
  r.cost.context_len = 40;
  r.cost.target_s = {0.010, 0.012};
  r.cost.draft_round_s = {0.0, 0.001};
  r.cost.draft_step_s = 0.001;
  r.cost.host_round_s = {0.0001, 0.0002};
  r.cost.baseline_step_s = 0.0095;
  r.spread.reps = 3;
  // {min, median, max, mean}; the first call's spread without a mean, as files written before
  // the means were kept.
  r.spread.baseline_step_s = {{0.009}, {0.0095}, {0.012}, {0.0101}};
  r.spread.target_s = {{0.010, 0.012}, {0.011, 0.013}, {0.020, 0.013}, {0.0135, 0.0127}};
  r.spread.draft_round_s = {{0.0, 0.001}, {0.0, 0.0015}, {0.0, 0.002}, {0.0, 0.0016}};
  r.spread.host_round_s = {{0.0001, 0.0002}, {0.0001, 0.0002}, {0.0003, 0.0002}, {0.00015, 0.0002}};
  r.spread.draft_one_behind_s = {{0.001}, {0.002}, {0.003}, {0.002}};
  r.spread.draft_two_behind_s = {{0.0012}, {0.0013}, {0.0014}, {0.0013}};
  r.spread.draft_first_call_s = {{0.004}, {0.005}, {0.006}, {}};
  r.taken.utc = "2026-01-02T03:04:05Z";
  r.taken.load_before = 0.5;
  r.taken.load_after = 1.25;
  r.taken.git_commit = "abc123";
  r.taken.git_describe = "abc123-dirty";
  r.taken.cpu_model = "Some CPU";
  r.taken.hostname = "host";
  r.taken.gpu = "none";
  r.taken.matmul_isa = "avx2";
  r.taken.cores = 2;
  r.taken.threads = 1;
  r.taken.target_sha256 = std::string(64, 'a');
  r.taken.draft_sha256 = "";
  const CostProfileRecord b =
      cost_profile_record_from_json(nlohmann::json::parse(cost_profile_to_json(r).dump()), "f");
  EXPECT_EQ(b.spread.reps, 3);
  EXPECT_EQ(b.spread.target_s.median, r.spread.target_s.median);
  EXPECT_EQ(b.spread.draft_round_s.max, r.spread.draft_round_s.max);
  EXPECT_EQ(b.spread.host_round_s.min, r.spread.host_round_s.min);
  EXPECT_EQ(b.spread.draft_first_call_s.median, r.spread.draft_first_call_s.median);
  EXPECT_EQ(b.spread.target_s.mean, r.spread.target_s.mean);
  EXPECT_EQ(b.spread.baseline_step_s.mean, r.spread.baseline_step_s.mean);
  EXPECT_TRUE(b.spread.draft_first_call_s.mean.empty());
  EXPECT_EQ(b.cost.baseline_step_s, 0.0095);
  EXPECT_EQ(b.spread.baseline_step_s.max, r.spread.baseline_step_s.max);
  EXPECT_EQ(b.taken.utc, r.taken.utc);
  EXPECT_EQ(b.taken.load_before, 0.5);
  EXPECT_EQ(b.taken.load_after, 1.25);
  EXPECT_EQ(b.taken.git_describe, "abc123-dirty");
  EXPECT_EQ(b.taken.cpu_model, "Some CPU");
  EXPECT_EQ(b.taken.cores, 2);
  EXPECT_EQ(b.taken.threads, 1);
  EXPECT_EQ(b.taken.target_sha256, r.taken.target_sha256);
  EXPECT_EQ(b.taken.draft_sha256, "");
}

// Bad spreads and circumstances: one InputError naming the file and the key.
TEST(CostProfileFile, BadSpreadOrCircumstancesNameFileAndKey) {
  const std::string base = R"("format":"speclab-cost-profile","version":1,"target_s":[0.01,0.02],)"
                           R"("draft_round_s":[0,0.001],"draft_step_s":0.001,"host_round_s":[0,0])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("spread":[1])", "f.json: spread: expected an object"},
      {R"("spread":{"target_s":{}})", "f.json: spread: reps: missing"},
      {R"("spread":{"reps":0})", "f.json: spread: reps: expected a whole number >= 1"},
      {R"("spread":{"reps":3})", "f.json: spread.target_s: expected an object"},
      {R"("spread":{"reps":3,"target_s":{"min":[0.01],"median":[0.01],"max":[0.01]}})",
       "f.json: spread.target_s: expected 2 entries in min, median and max, got 1, 1, 1"},
      {R"("spread":{"reps":3,"target_s":{"min":[0.01,0.02],"median":[0.005,0.02],)"
       R"("max":[0.03,0.02]}})",
       "f.json: spread.target_s[0]: expected finite seconds 0 <= min <= median <= max"},
      {R"("spread":{"reps":3,"target_s":{"min":[0.01,0.02],"median":["x",0.02],)"
       R"("max":[0.03,0.02]}})",
       "f.json: spread.target_s: median[0]: expected a number"},
      {R"("spread":{"reps":3,"target_s":{"min":[0.01,0.02],"median":[0.01,0.02],)"
       R"("max":[0.03,0.02],"mean":[0.02]}})",
       "f.json: spread.target_s: expected 2 entries in mean, got 1"},
      {R"("spread":{"reps":3,"target_s":{"min":[0.01,0.02],"median":[0.01,0.02],)"
       R"("max":[0.03,0.02],"mean":[0.02,0.025]}})",
       "f.json: spread.target_s.mean[1]: expected min <= mean <= max, got 0.02, 0.025, 0.02"},
      {R"("baseline_step_s":"fast")", "f.json: baseline_step_s: expected a number"},
      {R"("baseline_step_s":-0.5)", "f.json: baseline_step_s: expected finite seconds >= 0"},
      {R"("spread":{"reps":3,"target_s":{"min":[1,2],"median":[1,2],"max":[1,2]},)"
       R"("draft_round_s":{"min":[0,1],"median":[0,1],"max":[0,1]},)"
       R"("host_round_s":{"min":[0,0],"median":[0,0],"max":[0,0]},)"
       R"("draft_one_behind_s":{"min":[1],"median":[1],"max":[1]},)"
       R"("draft_two_behind_s":{"min":[1],"median":[1],"max":[1]},)"
       R"("draft_first_call_s":{"min":[1],"median":[1],"max":[1]},)"
       R"("baseline_step_s":{"min":[1,2],"median":[1,2],"max":[1,2]}})",
       "f.json: spread.baseline_step_s: expected 1 entries in min, median and max, got 2, 2, 2"},
      {R"("taken":"yesterday")", "f.json: taken: expected an object"},
      {R"("taken":{"utc":5})", "f.json: taken: utc: expected a string"},
      {R"("taken":{"load_before":"high"})", "f.json: taken: load_before: expected a number"},
      {R"("taken":{"machine":[]})", "f.json: taken.machine: expected an object"},
      // Seen: read past or taken as they were (a prediction of 0.000 from draft_round_s[0] 5).
      {R"("colour":"red")",
       "f.json: unknown key 'colour' (a speclab cost profile has no such "
       "figure)"},
      {R"("source":5)", "f.json: source: expected a string"},
      {R"("context_len":-5)",
       "f.json: context_len: expected a whole number of tokens >= 0, got -5"},
      {R"("c":-1)", "f.json: c: -1 is not what the figures give (0.1; c is derived, not read)"},
      {R"("c":"x")", "f.json: c: expected a number"},
  };
  const nlohmann::json zero_first = nlohmann::json::parse(
      R"({"format":"speclab-cost-profile","version":1,"target_s":[0.01,0.02],)"
      R"("draft_round_s":[5,0.001],"draft_step_s":0.001,"host_round_s":[0,0]})");
  try {
    cost_profile_record_from_json(zero_first, "f.json");
    ADD_FAILURE() << "draft_round_s[0] = 5 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.json: draft_round_s[0]: expected 0 (drafting no token takes no time), got 5");
  }
  EXPECT_NO_THROW(
      cost_profile_record_from_json(nlohmann::json::parse("{" + base + ",\"c\":0.1}"), "f.json"));
  for (const auto& [extra, message] : cases) {
    const nlohmann::json j = nlohmann::json::parse("{" + base + "," + extra + "}");
    try {
      cost_profile_record_from_json(j, "f.json");
      ADD_FAILURE() << extra << ": accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(message), std::string::npos) << extra << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << extra << ": " << what;
    }
  }
}

// A profile that no longer describes the machine: the run's cells were measured, then the
// profile's file is replaced by one whose target calls are a hundred times faster (far past
// any speed swing of a loaded machine between the run and its resume) and which was
// taken under a load above the cores (as a profile copied from another machine, or taken
// while something else ran, would be), with plain-step repetitions that reached down to half
// its median (the machine changed speed while it was taken); the resumed cell is predicted
// from it and its row says all three, as the run summary does.
TEST(CostProfileFile, AStaleProfileIsFlaggedByTheCellItPredicts) {
  ScratchDir d;
  const std::string cfg = tiny_config(d);
  const std::string out = d.file("R");
  ASSERT_EQ(run_speclab("run '" + cfg + "' --out '" + out + "' --no-plots").exit_code, 0);
  const auto full = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(full.size(), 2u);
  const std::string cost_file =
      out + "/profiles/cost-" + full[0]["prediction_group"].get<std::string>() + ".json";
  nlohmann::json p = nlohmann::json::parse(read_bytes(cost_file));
  constexpr double kFaster = 100;
  for (auto& t : p["target_s"]) t = t.get<double>() / kFaster;
  p["baseline_step_s"] = p["baseline_step_s"].get<double>() / kFaster;
  // c is derived from the figures and checked against them on reading.
  p["c"] = p["draft_step_s"].get<double>() / p["target_s"][0].get<double>();
  // The head's share of the target calls and of the plain step, scaled with them (a part is
  // checked to be at most its whole).
  if (p.contains("parts") && p["parts"].contains("target_head_s")) {
    for (auto& t : p["parts"]["target_head_s"]) t = t.get<double>() / kFaster;
    p["parts"]["baseline_step_head_s"] = p["parts"]["baseline_step_head_s"].get<double>() / kFaster;
  }
  // Above any real load of the machine running the test (the flag reports the higher of the
  // two readings).
  p["taken"]["load_before"] = 99.5;
  p["taken"]["load_after"] = 99.5;
  nlohmann::json& plain = p["spread"]["baseline_step_s"];
  plain["median"][0] = p["baseline_step_s"];
  plain["max"][0] = plain["max"][0].get<double>() / kFaster;
  plain["min"][0] = p["baseline_step_s"].get<double>() / 2;
  plain["mean"][0] = p["baseline_step_s"];
  std::ofstream(cost_file, std::ios::trunc) << p.dump() << "\n";

  const CliResult resumed = resume_last_cell(cfg, out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto rows = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["cost_profile_source"], "reused");
  const std::string flags = rows[1]["flags"].dump();
  EXPECT_NE(flags.find("profile_stale: verify"), std::string::npos) << flags;
  EXPECT_NE(flags.find("baseline_drift: plain loop"), std::string::npos) << flags;
  EXPECT_NE(flags.find("in the cost profile"), std::string::npos) << flags;
  EXPECT_NE(flags.find("profile_load_above_cores: load average 99.50"), std::string::npos) << flags;
  EXPECT_NE(flags.find("profile_unsteady: the cost profile's plain step ranged"), std::string::npos)
      << flags;
  EXPECT_NE((resumed.out + resumed.err).find("profile_stale"), std::string::npos)
      << resumed.out << resumed.err;
}

// Held-out prompts: a run on another prompt set predicts its cells from the first run's
// profiles (`speclab run --profiles DIR`): the same groups (the profiles do not depend on the
// prompts), read not measured, the rows say the acceptance profile's prompts were another set,
// and `speclab predict --profiles DIR` of the same config predicts the same figures. Missing
// profiles, or --profiles with --resume, are refused in one line before any row is written.
TEST(CostProfileFile, HeldOutPromptsArePredictedFromAnotherRunsProfiles) {
  ScratchDir d;
  const std::string cfg = tiny_config(d);
  ASSERT_EQ(run_speclab("run '" + cfg + "' --out '" + d.file("A") + "' --no-plots").exit_code, 0);
  const auto a_rows = read_jsonl(d.file("A/results.jsonl"));
  ASSERT_EQ(a_rows.size(), 2u);
  for (const auto& row : a_rows) EXPECT_EQ(row["profile_prompts"], "same");
  std::string other = read_bytes(cfg);
  const std::string from = "tiny-in-domain.jsonl", to = "tiny-out-of-domain.jsonl";
  ASSERT_NE(other.find(from), std::string::npos);
  other.replace(other.find(from), from.size(), to);
  const std::string cfg_b = d.write("tiny-b.yaml", other);

  const CliResult b = run_speclab("run '" + cfg_b + "' --out '" + d.file("B") +
                                  "' --no-plots --profiles '" + d.file("A") + "'");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto b_rows = read_jsonl(d.file("B/results.jsonl"));
  ASSERT_EQ(b_rows.size(), 2u);
  EXPECT_FALSE(fs::exists(d.file("B/profiles")));  // nothing measured or written
  for (size_t i = 0; i < 2; i++) {
    EXPECT_NE(b_rows[i]["config_hash"], a_rows[i]["config_hash"]);
    EXPECT_EQ(b_rows[i]["prediction_group"], a_rows[i]["prediction_group"]);
    EXPECT_EQ(b_rows[i]["profile_prompts"], "other");
    EXPECT_EQ(b_rows[i]["cost_profile_source"], "reused");
    EXPECT_EQ(b_rows[i]["cost_profile_target_s"], a_rows[i]["cost_profile_target_s"]);
    EXPECT_EQ(b_rows[i]["alpha_profile"], a_rows[i]["alpha_profile"]);
    EXPECT_TRUE(b_rows[i]["prediction_error"].is_number());
  }
  const CliResult p = run_speclab("predict '" + cfg_b + "' --out '" + d.file("P") +
                                  "' --profiles '" + d.file("A") + "'");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  size_t n = 0;
  for (const auto& row : read_jsonl(d.file("P/predictions.jsonl"))) {
    if (row["row_type"] != "cell") continue;
    EXPECT_EQ(row["profile_prompts"], "other");
    EXPECT_DOUBLE_EQ(row["predicted_speedup"].get<double>(),
                     b_rows[n++]["predicted_speedup"].get<double>());
  }
  EXPECT_EQ(n, 2u);

  const CliResult missing = run_speclab("run '" + cfg_b + "' --out '" + d.file("C") +
                                        "' --no-plots --profiles '" + d.file("nowhere") + "'");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(missing.one_line_error()) << missing.err;
  EXPECT_NE(missing.err.find("--profiles: "), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("nowhere/profiles/cost-"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(d.file("C/results.jsonl")));
  const CliResult with_resume =
      run_speclab("run '" + cfg_b + "' --out '" + d.file("B") +
                  "' --resume --no-plots --profiles '" + d.file("A") + "'");
  EXPECT_EQ(with_resume.exit_code, 2) << with_resume.err;
  EXPECT_TRUE(with_resume.one_line_error()) << with_resume.err;
  EXPECT_NE(with_resume.err.find("does not combine with --resume"), std::string::npos)
      << with_resume.err;
  const CliResult cost_only =
      run_speclab("run '" + cfg_b + "' --out '" + d.file("D") + "' --no-plots --profiles '" +
                  d.file("A") + "' --set measure.cost_only=true");
  EXPECT_EQ(cost_only.exit_code, 2) << cost_only.err;
  EXPECT_TRUE(cost_only.one_line_error()) << cost_only.err;
  EXPECT_NE(cost_only.err.find("measure.cost_only predicts nothing"), std::string::npos)
      << cost_only.err;
  EXPECT_FALSE(fs::exists(d.file("D/results.jsonl")));
}

// A run killed before its last row, then resumed: the cell is run again, predicted from the
// profile the earlier row came from (read, not measured again), and the profile's file keeps
// every byte. A profile file missing from the directory is measured and written; the ones
// there are still kept.
TEST(CostProfileFile, ResumeNeverOverwritesTheProfileEarlierRowsCameFrom) {
  ScratchDir d;
  const std::string cfg = tiny_config(d);
  const std::string out = d.file("R");
  ASSERT_EQ(run_speclab("run '" + cfg + "' --out '" + out + "' --no-plots").exit_code, 0);
  const auto full = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(full.size(), 2u);
  const std::string g = full[0]["prediction_group"].get<std::string>();
  ASSERT_EQ(full[1]["prediction_group"], g);
  const std::string cost_file = out + "/profiles/cost-" + g + ".json";
  const std::string acc_file = out + "/profiles/acceptance-" + g + ".json";
  const std::string cost_bytes = read_bytes(cost_file), acc_bytes = read_bytes(acc_file);
  const std::string index_bytes = read_bytes(out + "/profiles/index.json");
  ASSERT_FALSE(cost_bytes.empty());

  const CliResult resumed = resume_last_cell(cfg, out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto rows = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["cell_id"], full[1]["cell_id"]);
  EXPECT_EQ(rows[0]["cost_profile_source"], "measured");
  EXPECT_EQ(rows[1]["cost_profile_source"], "reused");
  EXPECT_EQ(rows[1]["cost_profile_file"], cost_file);
  EXPECT_EQ(rows[1]["cost_profile_taken_utc"], rows[0]["cost_profile_taken_utc"]);
  EXPECT_EQ(rows[1]["cost_profile_target_s"], full[1]["cost_profile_target_s"]);
  EXPECT_DOUBLE_EQ(rows[1]["predicted_speedup"].get<double>(),
                   full[1]["predicted_speedup"].get<double>());
  EXPECT_EQ(read_bytes(cost_file), cost_bytes);
  EXPECT_EQ(read_bytes(acc_file), acc_bytes);
  EXPECT_EQ(read_bytes(out + "/profiles/index.json"), index_bytes);

  // The acceptance profile lost (a kill between the two files): it alone is measured again.
  drop_last_row(out + "/results.jsonl");
  fs::remove(acc_file);
  const CliResult partial =
      run_speclab("run '" + cfg + "' --out '" + out + "' --resume --no-plots");
  ASSERT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_EQ(read_bytes(cost_file), cost_bytes);
  EXPECT_TRUE(testing_util::file_exists(acc_file));
  const auto again = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1]["cost_profile_source"], "reused");

  // An index that is not speclab's: one line naming it, exit 2, the profiles untouched.
  drop_last_row(out + "/results.jsonl");
  d.write("R/profiles/index.json", "[]\n");
  const CliResult bad = run_speclab("run '" + cfg + "' --out '" + out + "' --resume --no-plots");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(bad.one_line_error()) << bad.err;
  EXPECT_NE(bad.err.find("index.json: expected an object"), std::string::npos) << bad.err;
  EXPECT_EQ(read_bytes(cost_file), cost_bytes);
  // Seen: an entry naming a file outside the directory, or of another type, was read past.
  d.write("R/profiles/index.json", R"({"g": {"cost_profile": "../../x.json"}})"
                                   "\n");
  const CliResult outside =
      run_speclab("run '" + cfg + "' --out '" + out + "' --resume --no-plots");
  EXPECT_EQ(outside.exit_code, 2) << outside.err;
  EXPECT_TRUE(outside.one_line_error()) << outside.err;
  EXPECT_NE(outside.err.find("index.json: g.cost_profile: expected a file name in this "
                             "directory, got \"../../x.json\""),
            std::string::npos)
      << outside.err;
}

// `speclab run` checks each cell's cost profile before the cell (on by default): every row
// says how the check went and what plain step it timed. A profile that no longer describes
// the machine (its file replaced by one whose plain step and its spread read a hundred times
// slower, as one taken on another machine or in a bad minute would) fails the check when the run
// resumes: it is retaken into a file of its own before the cell is predicted, the row names that
// file and says "retaken", and the file the earlier row came from is left as it was.
TEST(CostProfileFile, ARunChecksItsProfileBeforeEachCellAndRetakesOneThatNoLongerHolds) {
  ScratchDir d;
  const std::string cfg = tiny_config(d, "0.1");
  const std::string out = d.file("R");
  const CliResult first = run_speclab("run '" + cfg + "' --out '" + out + "' --no-plots");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto full = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(full.size(), 2u);
  for (const auto& row : full) {
    ASSERT_TRUE(row.contains("cost_profile_check")) << row.dump();
    EXPECT_TRUE(row["cost_profile_check"] == "held" || row["cost_profile_check"] == "retaken")
        << row["cost_profile_check"];
    EXPECT_GT(row["cost_profile_check_step_s"].get<double>(), 0);
  }
  const std::string g = full[0]["prediction_group"].get<std::string>();
  const std::string cost_file = out + "/profiles/cost-" + g + ".json";
  nlohmann::json p = nlohmann::json::parse(read_bytes(cost_file));
  p["baseline_step_s"] = p["baseline_step_s"].get<double>() * 100;
  for (const char* end : {"min", "median", "max", "mean"})
    p["spread"]["baseline_step_s"][end][0] =
        p["spread"]["baseline_step_s"][end][0].get<double>() * 100;
  // (its other figures as they were: a profile that mixes two speeds)
  std::ofstream(cost_file, std::ios::trunc) << p.dump() << "\n";
  const std::string tampered = read_bytes(cost_file);
  for (const auto& e : fs::directory_iterator(out + "/profiles"))
    if (e.path().filename().string().find("-retake") != std::string::npos) fs::remove(e.path());

  const CliResult resumed = resume_last_cell(cfg, out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto rows = read_jsonl(out + "/results.jsonl");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["cost_profile_check"], "retaken");
  EXPECT_EQ(rows[1]["cost_profile_source"], "measured");
  const std::string retaken = out + "/profiles/cost-" + g + "-retake1.json";
  EXPECT_EQ(rows[1]["cost_profile_file"], retaken);
  ASSERT_TRUE(testing_util::file_exists(retaken));
  EXPECT_EQ(read_bytes(cost_file), tampered) << "never overwritten";
  const nlohmann::json r = nlohmann::json::parse(read_bytes(retaken));
  EXPECT_EQ(rows[1]["cost_profile_baseline_step_s"], r["baseline_step_s"]);
  EXPECT_LT(10 * r["baseline_step_s"].get<double>(), p["baseline_step_s"].get<double>());
  EXPECT_NE((resumed.out + resumed.err).find("retaking it"), std::string::npos) << resumed.err;
}

// A bad band is refused at load, naming the key.
TEST(CostProfileFile, ARecheckBandOutsideZeroToOneIsRefused) {
  ScratchDir d;
  for (const char* bad : {"-0.1", "1.5", "nan"}) {
    const std::string cfg = tiny_config(d, bad);
    const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("B") + "' --no-plots");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_TRUE(r.one_line_error()) << r.err;
    EXPECT_NE(r.err.find("measure.cost_profile_recheck"), std::string::npos) << r.err;
    EXPECT_FALSE(testing_util::file_exists(d.file("B/results.jsonl"))) << bad;
  }
}

// Profiles measured while a signal stops the run are partial (the rollouts stop early): none
// is written, so that a resumed run measures the group again rather than reading them.
TEST(CostProfileFile, ProfilesCutShortByASignalAreNotWritten) {
  ScratchDir d;
  const ExperimentConfig cfg = experiment_config_load(tiny_config(d), {});
  const std::vector<Cell> cells = sweep_expand(cfg);
  const auto target = llama_load(std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/tiny-target-5m");
  LlamaRunner runner(*target, 128);
  const auto drafter = drafter_create("lookup:n=3", *target, 128);
  const std::vector<PromptTokens> prompts = {{"p", {1, 5, 9, 5, 9, 5}, "c"}};
  const std::atomic<bool> interrupted{true};
  for (ProfileMode mode : {ProfileMode::kMeasure, ProfileMode::kResume}) {
    const std::string dir = d.file(mode == ProfileMode::kMeasure ? "M" : "R");
    CellPredictor predictor(cfg, cells, &runner, prompts, {}, dir, mode, nullptr, &interrupted);
    try {
      predictor.predict(cells[0], drafter.get());  // nothing to predict from: may throw
    } catch (const InputError&) {
    }
    EXPECT_TRUE(fs::is_empty(dir)) << dir << ": " << fs::directory_iterator(dir)->path();
  }
  // Not interrupted, the same predictor writes both profiles and the index.
  const std::atomic<bool> running{false};
  CellPredictor predictor(cfg, cells, &runner, prompts, {}, d.file("N"), ProfileMode::kMeasure,
                          nullptr, &running);
  predictor.predict(cells[0], drafter.get());
  EXPECT_EQ(std::distance(fs::directory_iterator(d.file("N")), fs::directory_iterator{}), 3);
}

}  // namespace
}  // namespace speclab
