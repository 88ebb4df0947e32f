// The prediction-quality table (experiments/results/result_tables.cpp, prediction_quality) on
// hand-made rows: one-at-a-time cells are also reported by what the acceptance half of their
// prediction rests on (T = 0: an identity; T > 0; synthetic acceptance) when a run mixes them,
// each row the median and max of its cells' |errors|; a run of one regime keeps one row.
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

const Table* quality(const std::vector<Table>& ts) {
  for (const auto& t : ts)
    if (t.name == "prediction_quality") return &t;
  return nullptr;
}

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

}  // namespace
}  // namespace speclab
