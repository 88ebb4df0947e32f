// Paper-style tables from result rows (results.jsonl), in markdown, CSV or LaTeX:
//   acceptance   the Table 3 analog: alpha per target x drafter x temperature
//   speedup      the Table 4 analog: measured speedup (with its interval) beside the
//                Theorem 3.8 and refined predictions, with alpha, c, gamma, tau
//   gamma        speedup vs gamma per drafter and temperature
//   category_*   acceptance, tau and speedup per prompt category
//   (experiments/results/category_tables.h) cost         c and T(k)/T(1) (cost-only runs)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/results/result_row.h"
#include "experiments/results/table.h"

namespace speclab {

// The tables of result rows. Rows of different config_hash are never pooled: each config gets
// its own set of tables, in the order the configs first appear, titled with its hash when there
// are several. machine: cells for csv/json (full precision, "" for no value, fractions rather
// than percent, the speedup interval as speedup_ci_lo, speedup_ci_hi) instead of for reading.
std::vector<Table> result_tables_build(const std::vector<ResultRow>& rows, bool machine = false);
// All tables, one after another (md, latex; csv: one after another without separators, so
// use table_render per table for files), or for json one object {"tables": [...]}.
std::string result_tables_render(const std::vector<ResultRow>& rows, TableFormat format);

}  // namespace speclab
