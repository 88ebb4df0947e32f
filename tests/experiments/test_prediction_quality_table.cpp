// The prediction-quality table (experiments/results/result_tables.cpp, prediction_quality) on
// hand-made rows: one-at-a-time cells are also reported by what the acceptance half of their
// prediction rests on (T = 0: an identity; T > 0; synthetic acceptance) when a run mixes them,
// each row the median and max of its cells' |errors|; a run of one regime keeps one row. And
// the prediction_vs_theorem table beside it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/result_tables.h"

namespace speclab {
namespace {

nlohmann::json cell(const std::string& id, double temperature, bool synthetic, double err,
                    double thm_err) {
  nlohmann::json r = {{"cell_id", id},
                      {"drafter", "d"},
                      {"temperature", temperature},
                      {"gamma", 2},
                      {"gamma_policy", "fixed"},
                      {"prediction_error", err},
                      {"thm38_error", thm_err}};
  if (synthetic) r["synthetic_acceptance"] = {0.8};
  return r;
}

const Table* table_named(const std::vector<Table>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

const Table* quality(const std::vector<Table>& ts) { return table_named(ts, "prediction_quality"); }

std::vector<Table> tables_of(const std::vector<nlohmann::json>& cells) {
  std::vector<ResultRow> rows;
  for (const auto& c : cells) rows.push_back(ResultRow::from_json(c, "test row"));
  return result_tables_build(rows, /*machine=*/true);
}

TEST(PredictionQualityTable, OneAtATimeCellsAreSplitByRegimeWhenARunMixesThem) {
  const std::vector<Table> ts =
      tables_of({cell("a", 0.0, false, 0.02, 0.3), cell("b", 0.0, false, -0.04, 0.5),
                 cell("c", 1.0, false, 0.10, 0.9), cell("d", 0.0, true, -0.06, 0.2)});
  const Table* t = quality(ts);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->headers.front(), "figure");
  ASSERT_EQ(t->rows.size(), 4u);
  EXPECT_EQ(t->rows[0][0], "one request at a time: speedup");
  EXPECT_EQ(t->rows[0][1], "4");
  EXPECT_NE(t->rows[1][0].find("T = 0 (tokens per round an identity"), std::string::npos);
  EXPECT_EQ(t->rows[1][1], "2");                      // a and b: d is synthetic
  EXPECT_NEAR(std::stod(t->rows[1][3]), 0.03, 1e-9);  // median of 0.02, 0.04
  EXPECT_NEAR(std::stod(t->rows[1][4]), 0.04, 1e-9);  // max
  EXPECT_NE(t->rows[2][0].find("T > 0"), std::string::npos);
  EXPECT_EQ(t->rows[2][1], "1");
  EXPECT_NE(t->rows[3][0].find("synthetic acceptance"), std::string::npos);
  EXPECT_NEAR(std::stod(t->rows[3][3]), 0.06, 1e-9);
}

TEST(PredictionQualityTable, ARunOfOneRegimeKeepsOneRow) {
  const std::vector<Table> ts =
      tables_of({cell("a", 1.0, false, 0.02, 0.3), cell("b", 0.5, false, -0.04, 0.5)});
  const Table* t = quality(ts);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->headers.front(), "cells");
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0], "2");
}

// Each prediction is also placed against the measured speedup's own interval: a prediction
// inside it is as close as that measurement can tell; the interval's median half-width says how
// large an error the measurement's sampling noise alone makes.
TEST(PredictionQualityTable, CountsPredictionsInsideTheMeasuredIntervalBesideItsHalfWidth) {
  // measured 1.0 in [0.9, 1.1] (half-width 10%): +5% inside, Theorem 3.8 +20% outside;
  // measured 2.0 in [1.8, 2.4] (15%): -15% (1.7) outside, Theorem 3.8 +10% (2.2) inside;
  // a row without an interval counts in the errors only.
  std::vector<nlohmann::json> cells = {cell("a", 1.0, false, 0.05, 0.20),
                                       cell("b", 1.0, false, -0.15, 0.10),
                                       cell("c", 1.0, false, 0.01, 0.01)};
  cells[0]["speedup"] = 1.0;
  cells[0]["speedup_ci_lo"] = 0.9;
  cells[0]["speedup_ci_hi"] = 1.1;
  cells[1]["speedup"] = 2.0;
  cells[1]["speedup_ci_lo"] = 1.8;
  cells[1]["speedup_ci_hi"] = 2.4;
  const std::vector<Table> ts = tables_of(cells);
  const Table* t = quality(ts);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 1u);
  const auto col = [&](const std::string& h) {
    for (size_t i = 0; i < t->headers.size(); i++)
      if (t->headers[i] == h) return t->rows[0][i];
    std::string all;
    for (const auto& x : t->headers) all += "[" + x + "]";
    ADD_FAILURE() << "no column " << h << " in " << all;
    return std::string();
  };
  EXPECT_EQ(col("cells"), "3");
  EXPECT_EQ(col("inside"), "1 of 2");
  EXPECT_NEAR(std::stod(col("measured half-width")), 0.125, 1e-9);  // median of 10%, 15%
  EXPECT_EQ(col("thm 3.8 inside"), "1 of 2");
}

// The prediction against Theorem 3.8: ex ante, and at the run's own rounds (both cost models
// given the run's tokens per round); "closer" counts only cells where Theorem 3.8 is off by
// more than 3%, and batched cells (no Theorem 3.8) stay out.
TEST(PredictionQualityTable, PutsTheProfileBesideTheoremThreeEightExAnteAndAtTheRunsRounds) {
  std::vector<nlohmann::json> cells = {
      cell("a", 1.0, true, 0.02, 0.10),   // Thm off 10%, profile closer
      cell("b", 1.0, true, -0.06, 0.04),  // Thm off 4%, profile farther (the luck of the draw)
      cell("c", 1.0, true, 0.01, 0.02)};  // Thm within 3%: not counted
  cells[0]["profile_error_at_run_rounds"] = 0.01;
  cells[0]["thm38_error_at_run_rounds"] = 0.09;
  cells[1]["profile_error_at_run_rounds"] = -0.005;
  cells[1]["thm38_error_at_run_rounds"] = 0.095;
  cells[2]["profile_error_at_run_rounds"] = 0.002;
  cells[2]["thm38_error_at_run_rounds"] = 0.05;
  nlohmann::json batched = cell("d", 1.0, true, 0.3, 0.5);
  batched["concurrency"] = 4;
  cells.push_back(batched);
  const std::vector<Table> ts = tables_of(cells);
  const Table* t = table_named(ts, "prediction_vs_theorem");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 2u);
  const std::vector<std::string> want_headers = {"figure",
                                                 "cells",
                                                 "profile median |err|",
                                                 "profile max |err|",
                                                 "thm 3.8 median |err|",
                                                 "thm 3.8 max |err|",
                                                 "thm 3.8 off > 3%",
                                                 "profile closer"};
  EXPECT_EQ(t->headers, want_headers);
  EXPECT_EQ(t->rows[0][0], "ex ante");
  EXPECT_EQ(t->rows[0][1], "3");                      // d is batched
  EXPECT_NEAR(std::stod(t->rows[0][2]), 0.02, 1e-9);  // median of 0.02, 0.06, 0.01
  EXPECT_NEAR(std::stod(t->rows[0][3]), 0.06, 1e-9);
  EXPECT_NEAR(std::stod(t->rows[0][4]), 0.04, 1e-9);
  EXPECT_EQ(t->rows[0][6], "2");
  EXPECT_EQ(t->rows[0][7], "1 of 2");
  EXPECT_EQ(t->rows[1][0], "at the run's own rounds");
  EXPECT_EQ(t->rows[1][1], "3");
  EXPECT_NEAR(std::stod(t->rows[1][3]), 0.01, 1e-9);
  EXPECT_NEAR(std::stod(t->rows[1][4]), 0.09, 1e-9);  // median of 0.09, 0.095, 0.05
  EXPECT_EQ(t->rows[1][6], "3");
  EXPECT_EQ(t->rows[1][7], "3 of 3");
}

// The mean-cost diagnostic gets its own row, between the two, over the cells that carry it.
TEST(PredictionQualityTable, PutsTheMeanCostPredictionBesideTheoremThreeEight) {
  std::vector<nlohmann::json> cells = {
      cell("a", 1.0, true, 0.02, 0.10),   // Thm off 10%
      cell("b", 1.0, true, -0.06, 0.04),  // Thm off 4%
      cell("c", 1.0, true, 0.01, 0.02)};  // no mean-cost figure: an older row
  cells[0]["prediction_error_mean_costs"] = -0.03;
  cells[1]["prediction_error_mean_costs"] = 0.05;
  const std::vector<Table> ts = tables_of(cells);
  const Table* t = table_named(ts, "prediction_vs_theorem");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0][0], "ex ante");
  EXPECT_EQ(t->rows[1][0], "ex ante, mean costs");
  EXPECT_EQ(t->rows[1][1], "2");
  EXPECT_NEAR(std::stod(t->rows[1][2]), 0.04, 1e-9);  // median of 0.03, 0.05
  EXPECT_NEAR(std::stod(t->rows[1][3]), 0.05, 1e-9);
  EXPECT_NEAR(std::stod(t->rows[1][4]), 0.07, 1e-9);  // Theorem 3.8 over the same two cells
  EXPECT_EQ(t->rows[1][6], "2");
  EXPECT_EQ(t->rows[1][7], "1 of 2");  // a: 3% < 10%; b: 5% > 4%
}

// For reading, an |error| or a half-width is a size: "6.0%", not "+6.0%" (a signed error
// elsewhere in the tables keeps its sign).
TEST(PredictionQualityTable, SizesAreWrittenWithoutASign) {
  std::vector<ResultRow> rows;
  for (const auto& c : {cell("a", 1.0, true, -0.06, 0.10), cell("b", 1.0, true, 0.02, -0.04)})
    rows.push_back(ResultRow::from_json(c, "test row"));
  const std::vector<Table> ts = result_tables_build(rows, /*machine=*/false);
  for (const auto& t : ts) {
    if (t.name != "prediction_vs_theorem") continue;
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_EQ(t.rows[0][2], "4.0%");    // median of 6% and 2%
    EXPECT_EQ(t.rows[0][3], "6.0%");    // max
    EXPECT_EQ(t.rows[0][4], "7.0%");    // median of 10% and 4%
    EXPECT_EQ(t.rows[0][7], "2 of 2");  // a: 6% < 10%, b: 2% < 4%
    return;
  }
  ADD_FAILURE() << "no prediction_vs_theorem table";
}

}  // namespace
}  // namespace speclab
