// `speclab run` with sweep.synthetic_acceptance end to end on the tiny zoo: the
// synthetic cell's row carries the configured alpha, the measured one, and predictions made
// at the configured alpha; the exact cell beside it is unchanged (and still checked for
// greedy parity); tables.md shows the synthetic table.
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

TEST(CliRunSynthetic, RowsCarryConfiguredAndMeasuredAlphaAndPredictionsAtTheConfiguredAlpha) {
  ScratchDir d;
  const std::string cfg =
      d.write("syn.yaml", testing_util::tiny_zoo_config_head("syn", 2) +
                              "generation:\n"
                              "  max_new_tokens: 24\n"
                              "  warmup: 0\n"
                              "  threads: 1\n"
                              "  ctx: 128\n"
                              "  ignore_eos: true\n"
                              "measure:\n"
                              "  bootstrap_resamples: 20\n"
                              "sweep:\n"
                              "  drafter: [d]\n"
                              "  gamma: [3]\n"
                              "  temperature: [0]\n"
                              "  synthetic_acceptance: [off, 0.6, [0.9, 0.5]]\n");
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(d.file("out/results.jsonl"));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 3u);

  const auto& exact = rows[0];
  EXPECT_FALSE(exact.contains("synthetic_acceptance"));
  EXPECT_EQ(exact["greedy_outputs_match"], true);
  EXPECT_EQ(exact["thm38_alpha"], exact["alpha_profile"]);
  EXPECT_EQ(exact["prediction_model"], "chain");

  const auto& scalar = rows[1];
  EXPECT_EQ(scalar["synthetic_acceptance"], nlohmann::json::parse("[0.6]"));
  EXPECT_FALSE(scalar.contains("greedy_outputs_match"));  // the text is not the target's
  EXPECT_EQ(scalar["prediction_model"], "configured-acceptance");
  EXPECT_NEAR(scalar["alpha_profile"].get<double>(), 0.6, 1e-6);
  EXPECT_DOUBLE_EQ(scalar["thm38_alpha"].get<double>(), 0.6);
  EXPECT_EQ(scalar["acceptance_by_position_configured"], nlohmann::json::parse("[0.6, 0.6, 0.6]"));
  EXPECT_NE(scalar["cell_id"], exact["cell_id"]);
  for (const char* key : {"alpha_empirical", "speedup", "thm38_speedup", "thm38_error",
                          "predicted_speedup", "prediction_error", "predicted_tokens_per_round",
                          "c_profile", "profile_error_at_run_rounds", "thm38_error_at_run_rounds"})
    EXPECT_TRUE(scalar.contains(key)) << key;
  // Theorem 3.8 at the run's own rounds: the run's tokens per round over (gamma c + 1).
  EXPECT_NEAR(scalar["thm38_error_at_run_rounds"].get<double>(),
              scalar["tau"].get<double>() / (3 * scalar["c_profile"].get<double>() + 1) /
                      scalar["speedup"].get<double>() -
                  1,
              1e-9);
  // Theorem 3.8 in the paper's form: the configured alpha, c from the cost profile, gamma 3.
  const double c = scalar["c_profile"], a = 0.6;
  const int g = 3;
  const double thm = (1 - std::pow(a, g + 1)) / ((1 - a) * (g * c + 1));
  EXPECT_NEAR(scalar["thm38_speedup"].get<double>(), thm, 1e-9 * thm);
  // The prediction's tokens per round: Eq. (1) at alpha 0.6 over 24-token requests (rounds
  // shrink near the end, so a little below the stationary value).
  EXPECT_LT(scalar["predicted_tokens_per_round"].get<double>(), 1 + a + a * a + a * a * a);
  EXPECT_GT(scalar["predicted_tokens_per_round"].get<double>(), 1 + a + a * a);

  // Per position: the configured list (last value repeating); Theorem 3.8 gets the i.i.d.
  // alpha with the same Eq. (1) tokens per round at gamma 3.
  const auto& list = rows[2];
  EXPECT_EQ(list["acceptance_by_position_configured"], nlohmann::json::parse("[0.9, 0.5, 0.5]"));
  const double a_thm = list["thm38_alpha"];
  const double tokens = 1 + 0.9 + 0.9 * 0.5 + 0.9 * 0.5 * 0.5;
  EXPECT_NEAR(1 + a_thm + a_thm * a_thm + a_thm * a_thm * a_thm, tokens, 1e-9);

  std::stringstream tables;
  tables << std::ifstream(d.file("out/tables.md")).rdbuf();
  EXPECT_NE(tables.str().find("Synthetic acceptance (known alpha)"), std::string::npos);
  EXPECT_NE(tables.str().find("| d | 0.0 | 3 | 0.90/0.50 |"), std::string::npos) << tables.str();
}

}  // namespace
}  // namespace speclab
