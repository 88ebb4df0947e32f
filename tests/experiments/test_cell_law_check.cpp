// Which exactness check a cell carries and its law check on realistic runs
// (experiments/measure/cell_law_check.h): the tiny zoo's target and 2m draft on the in-domain
// prompts at T = 1 pass; the same run with a planted wrong law (drafts accepted without the
// test) is flagged law_mismatch; `speclab run` writes the check each cell got: pit, greedy_tokens,
// argmax, and "not applicable" for lenient cells, greedy ones included, which are not flagged.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/threads.h"
#include "experiments/config/prompt_set.h"
#include "experiments/measure/cell_law_check.h"
#include "experiments/measure/run_flags.h"
#include "models/decode/law_check_round.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/model_drafter.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "tests/decode/planted_drafters.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

const std::string kSrc = SPECLAB_SOURCE_DIR;

using testing_util::UniformQDrafter;  // the plant: drafts accepted without the test

struct TinyZoo {
  std::unique_ptr<LlamaModel> target = llama_load(kSrc + "/models/zoo/tiny-target-5m");
  std::unique_ptr<LlamaModel> draft = llama_load(kSrc + "/models/zoo/tiny-draft-2m");
  std::vector<std::vector<int32_t>> prompts;
  TinyZoo() {
    for (const Prompt& p : prompt_set_load(kSrc + "/configs/prompts/tiny-in-domain.jsonl"))
      prompts.push_back(target->tokenizer->encode(p.text, /*add_bos=*/true));
  }
};

// A cell's run at T = 1, gamma 4, through the cell's own plan, tally, row and flags.
struct CheckedRun {
  ResultRow row;
  std::vector<std::string> flags;
  double drafted_per_round = 0;
};

CheckedRun run_cell(TinyZoo& zoo, Drafter& drafter) {
  Cell cell;
  cell.temperature = 1;
  cell.draft_temperature = 1;
  cell.gamma = 4;
  const CellExactnessPlan plan = cell_exactness_plan(cell, /*baseline=*/false);
  EXPECT_EQ(plan.check, "pit");
  EXPECT_TRUE(plan.law_check);
  LlamaRunner target(*zoo.target, 512);
  SpeculativeConfig cfg;
  cfg.gamma = cell.gamma;
  cfg.draft_sampling = cell.draft_sampling();
  LawCheckTally tally;
  int64_t drafted = 0, rounds = 0;
  for (size_t i = 0; i < zoo.prompts.size(); i++) {
    GenerationRequest req;
    req.prompt = zoo.prompts[i];
    req.max_new_tokens = 48;
    req.sampling = cell.target_sampling();
    req.request_id = i;
    req.law_check = plan.law_check;
    const GenerationResult g = generate_speculative(target, drafter, req, cfg);
    for (const RoundRecord& r : g.rounds) drafted += r.n_draft;
    rounds += static_cast<int64_t>(g.rounds.size());
    law_check_tally_add(g, &tally);
  }
  CheckedRun out;
  RunFlagInputs f;
  cell_put_law_check(plan, tally, 0, &out.row, &f);
  for (const std::string& s : run_flags_evaluate(f)) out.flags.push_back(s.substr(0, s.find(':')));
  out.drafted_per_round = static_cast<double>(drafted) / rounds;
  return out;
}

TEST(CellLawCheck, TinyZooAtTemperatureOnePassesAndAPlantedWrongLawAtGamma4IsFlagged) {
  threads_set(1);
  TinyZoo zoo;
  ASSERT_EQ(zoo.prompts.size(), 24u);
  ModelDrafter draft(*zoo.draft, "draft-2m", 512);

  const CheckedRun exact = run_cell(zoo, draft);
  EXPECT_EQ(*exact.row.exactness_check, "pit");
  EXPECT_GT(*exact.row.law_check_tokens, 1000);  // 24 prompts x 48 tokens
  EXPECT_EQ(*exact.row.law_check_impossible_tokens, 0);
  EXPECT_GE(*exact.row.law_check_p_value, kLawCheckLevel);
  EXPECT_EQ(*exact.row.law_check_level, kLawCheckLevel);
  EXPECT_EQ(exact.row.law_check_tokens_by_position->size(), 5u);  // positions 1..gamma+1
  EXPECT_GT(*exact.row.law_check_noncentrality_80, 0.0);
  EXPECT_GT(*exact.row.law_check_min_detectable_tv, 0.0);
  EXPECT_LT(*exact.row.law_check_min_detectable_tv, 0.2);
  // The run says how likely its own test was to catch a verifier accepting every draft.
  ASSERT_TRUE(exact.row.law_check_power_accept_all.has_value());
  EXPECT_GT(*exact.row.law_check_power_accept_all, 0.5);
  EXPECT_TRUE(exact.flags.empty()) << exact.flags[0];

  UniformQDrafter plant(draft);
  const CheckedRun wrong = run_cell(zoo, plant);
  EXPECT_GT(wrong.drafted_per_round, 3.5);  // it really drafts 4 (fewer only at a request's end)
  EXPECT_LT(*wrong.row.law_check_p_value, kLawCheckLevel);
  EXPECT_EQ(wrong.flags, std::vector<std::string>{"law_mismatch"});
}

TEST(CellLawCheck, PlanNamesTheCheckOrWhyNone) {
  Cell c;
  c.temperature = 0;
  EXPECT_EQ(cell_exactness_plan(c, true).check, "greedy_tokens");
  EXPECT_FALSE(cell_exactness_plan(c, true).law_check);
  EXPECT_EQ(cell_exactness_plan(c, false).check, "argmax");
  EXPECT_TRUE(cell_exactness_plan(c, false).law_check);
  c.lenience = 0.5;
  EXPECT_EQ(cell_exactness_plan(c, true).check.rfind("not applicable: lenient", 0), 0u);
  EXPECT_FALSE(cell_exactness_plan(c, true).law_check);
  c.lenience = 1;
  c.synthetic_acceptance = {0.6};
  c.temperature = 1;
  EXPECT_EQ(cell_exactness_plan(c, false).check.rfind("not applicable: synthetic", 0), 0u);
  // Every round verified on the device: no p on the host, so no check.
  c.synthetic_acceptance.clear();
  ResultRow row;
  RunFlagInputs f;
  cell_put_law_check(cell_exactness_plan(c, false), LawCheckTally(), 12, &row, &f);
  EXPECT_EQ(row.exactness_check->rfind("not applicable: every round was verified on", 0), 0u);
  EXPECT_EQ(f.law_check, "");
}

std::vector<nlohmann::json> run_rows(const testing_util::ScratchDir& d, const std::string& name,
                                     const std::string& sweep, bool baseline) {
  const std::string cfg =
      d.write(name + ".yaml", "name: " + name + "\nquestion: \"q\"\ntarget: " + kSrc +
                                  "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + kSrc +
                                  "/models/zoo/tiny-draft-2m\nprompts:\n  file: " + kSrc +
                                  "/configs/prompts/tiny-in-domain.jsonl\n  limit: 4\n"
                                  "generation:\n  max_new_tokens: 24\n  warmup: 0\n  threads: 1\n"
                                  "  ctx: 128\n  ignore_eos: true\nmeasure:\n  baseline: " +
                                  (baseline ? "true" : "false") +
                                  "\n  bootstrap_resamples: 10\n  cost_curve_max_k: 3\nsweep:\n"
                                  "  drafter: [d]\n  gamma: [2]\n" +
                                  sweep);
  const testing_util::CliResult r =
      testing_util::run_speclab("run '" + cfg + "' --out '" + d.file(name) + "' --no-plots");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(d.file(name + "/results.jsonl"));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

bool has_flag(const nlohmann::json& row, const std::string& code) {
  if (!row.contains("flags")) return false;
  for (const auto& f : row["flags"])
    if (f.get<std::string>().rfind(code + ":", 0) == 0) return true;
  return false;
}

TEST(CellLawCheck, RunWritesTheCheckEachCellGot) {
  testing_util::ScratchDir d;
  const auto rows = run_rows(d, "with-baseline", "  temperature: [0, 1]\n  lenience: [1, 0.5]\n",
                             /*baseline=*/true);
  ASSERT_EQ(rows.size(), 4u);
  int lenient_greedy = 0;
  for (const auto& row : rows) {
    const double t = row["temperature"], l = row["lenience"];
    const std::string check = row["exactness_check"];
    EXPECT_FALSE(has_flag(row, "greedy_mismatch")) << row["cell_id"];
    EXPECT_FALSE(has_flag(row, "law_mismatch")) << row["cell_id"];
    if (l < 1) {
      // Lenient cells differ from the target by design: no greedy comparison, a note instead.
      EXPECT_EQ(check, "not applicable: lenient verification (paper A.5) is inexact by design");
      EXPECT_FALSE(row.contains("greedy_outputs_match"));
      EXPECT_FALSE(row.contains("law_check_tokens"));
      lenient_greedy += t == 0;
    } else if (t == 0) {
      EXPECT_EQ(check, "greedy_tokens");
      EXPECT_EQ(row["greedy_outputs_match"], true);
    } else {
      EXPECT_EQ(check, "pit");
      EXPECT_EQ(row["law_check_tokens"], 4 * 24);
      EXPECT_GE(row["law_check_p_value"].get<double>(), 1e-4);
      EXPECT_TRUE(row.contains("law_check_power_accept_all"));
    }
  }
  EXPECT_EQ(lenient_greedy, 1);

  const auto greedy = run_rows(d, "no-baseline", "  temperature: [0]\n", /*baseline=*/false);
  ASSERT_EQ(greedy.size(), 1u);
  EXPECT_EQ(greedy[0]["exactness_check"], "argmax");
  EXPECT_EQ(greedy[0]["law_check_tokens"], 4 * 24);
  EXPECT_EQ(greedy[0]["law_check_impossible_tokens"], 0);
  EXPECT_FALSE(greedy[0].contains("law_check_p_value"));
  EXPECT_FALSE(has_flag(greedy[0], "law_mismatch"));
}

}  // namespace
}  // namespace speclab
