// The crossover table (experiments/results/result_tables.cpp, concurrency_crossover) on
// hand-made rows: the measured crossover is the largest N whose speedup interval lies above 1
// (a point figure of 1.003 within noise does not make speculation pay there), the point where
// no interval is estimated; the predicted one is the point above 1; and the grid steps between
// the two.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/result_tables.h"

namespace speclab {
namespace {

// One cell of a (lookup, T 0, gamma 2, fixed) curve at concurrency n: measured speedup with its
// interval (lo < 0: not estimated), predicted speedup.
nlohmann::json cell(int n, double speedup, double lo, double hi, double predicted) {
  nlohmann::json r = {{"cell_id", "c" + std::to_string(n)},
                      {"drafter", "lookup"},
                      {"temperature", 0.0},
                      {"gamma", 2},
                      {"gamma_policy", "fixed"}};
  const bool one = n == 1;
  if (!one) r["concurrency"] = n;
  r[one ? "speedup" : "throughput_speedup"] = speedup;
  if (!one) r["speedup"] = speedup;
  if (lo >= 0) {
    r[one ? "speedup_ci_lo" : "throughput_speedup_ci_lo"] = lo;
    r[one ? "speedup_ci_hi" : "throughput_speedup_ci_hi"] = hi;
  }
  r[one ? "predicted_speedup" : "predicted_throughput_speedup"] = predicted;
  return r;
}

const Table& crossover_table(const std::vector<Table>& ts) {
  for (const auto& t : ts)
    if (t.name == "concurrency_crossover") return t;
  ADD_FAILURE() << "no concurrency_crossover table";
  static const Table none{};
  return none;
}

std::string column(const Table& t, size_t row, const std::string& header) {
  for (size_t i = 0; i < t.headers.size(); i++)
    if (t.headers[i] == header) return t.rows.at(row).at(i);
  ADD_FAILURE() << header;
  return "";
}

std::vector<Table> tables_of(const std::vector<nlohmann::json>& cells) {
  std::vector<ResultRow> rows;
  for (const auto& c : cells) rows.push_back(ResultRow::from_json(c, "test row"));
  return result_tables_build(rows, /*machine=*/false);
}

TEST(ConcurrencyTables, MeasuredCrossoverNeedsTheIntervalAboveOne) {
  // N = 1 pays (1.10, [1.02, 1.20]); N = 2 reads 1.003 but its interval straddles 1; N = 4 and
  // 8 lose. Predicted: 1.2, 1.05, 0.95, 0.9.
  const std::vector<Table> ts =
      tables_of({cell(1, 1.10, 1.02, 1.20, 1.2), cell(2, 1.003, 0.93, 1.08, 1.05),
                 cell(4, 0.90, 0.85, 0.95, 0.95), cell(8, 0.80, 0.75, 0.86, 0.9)});
  const Table& t = crossover_table(ts);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(column(t, 0, "figure"), "measured");
  EXPECT_EQ(column(t, 0, "N=2"), "1.00");  // the point is shown
  EXPECT_EQ(column(t, 0, "last N above 1x"), "1");
  EXPECT_EQ(column(t, 1, "figure"), "predicted");
  EXPECT_EQ(column(t, 1, "last N above 1x"), "2");
  EXPECT_EQ(column(t, 1, "crossover off by (grid steps)"), "1");
}

TEST(ConcurrencyTables, WithoutAnIntervalThePointDecides) {
  // N = 8 with every request in flight at once: no interval, its point 1.04 counts.
  const std::vector<Table> ts =
      tables_of({cell(1, 1.10, 1.02, 1.20, 1.1), cell(2, 0.97, 0.90, 1.04, 1.05),
                 cell(4, 0.98, 0.93, 1.03, 0.99), cell(8, 1.04, -1, -1, 0.98)});
  const Table& t = crossover_table(ts);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(column(t, 0, "last N above 1x"), "8");
  EXPECT_EQ(column(t, 1, "last N above 1x"), "2");
  EXPECT_EQ(column(t, 1, "crossover off by (grid steps)"), "2");
  // Nothing pays anywhere: "none" on both, 0 steps apart.
  const std::vector<Table> lose =
      tables_of({cell(1, 0.9, 0.8, 0.99, 0.95), cell(2, 1.01, 0.9, 1.1, 0.97)});
  const Table& l = crossover_table(lose);
  EXPECT_EQ(column(l, 0, "last N above 1x"), "none");
  EXPECT_EQ(column(l, 1, "last N above 1x"), "none");
  EXPECT_EQ(column(l, 1, "crossover off by (grid steps)"), "0");
}

}  // namespace
}  // namespace speclab
