// Paper-style tables from result rows (results.jsonl), in markdown, CSV or LaTeX:
//   acceptance   the Table 3 analog: alpha per target x drafter x temperature
//   speedup      the Table 4 analog: measured speedup (with its interval) beside the
//                Theorem 3.8 and refined predictions, with alpha, c, gamma, tau
//   gamma        speedup vs gamma per drafter and temperature
//   cost         c and T(k)/T(1) (cost-only runs)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace speclab {

enum class TableFormat { kMarkdown, kCsv, kLatex };

// Parses "md" | "markdown" | "csv" | "latex"; InputError otherwise.
TableFormat table_format_parse(const std::string& name);

struct Table {
  std::string title;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};

std::vector<Table> result_tables_build(const std::vector<nlohmann::json>& rows);
std::string table_render(const Table& t, TableFormat format);
// All tables, one after another.
std::string result_tables_render(const std::vector<nlohmann::json>& rows, TableFormat format);

}  // namespace speclab
