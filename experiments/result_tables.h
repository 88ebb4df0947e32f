// Paper-style tables from result rows (results.jsonl), in markdown, CSV or LaTeX:
//   acceptance   the Table 3 analog: alpha per target x drafter x temperature
//   speedup      the Table 4 analog: measured speedup (with its interval) beside the
//                Theorem 3.8 and refined predictions, with alpha, c, gamma, tau
//   gamma        speedup vs gamma per drafter and temperature
//   category_*   acceptance, tau and speedup per prompt category (experiments/category_tables.h)
//   cost         c and T(k)/T(1) (cost-only runs)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/result_row.h"

namespace speclab {

enum class TableFormat { kMarkdown, kCsv, kLatex, kJson };

// Parses "md" | "markdown" | "csv" | "latex" | "json"; InputError otherwise.
TableFormat table_format_parse(const std::string& name);

// Built with every field given (clang -Wmissing-field-initializers); config_hash and experiment
// are filled in after the rows.
struct Table {
  std::string name;   // acceptance | speedup | gamma | category_* | tree | synthetic | cost
  std::string title;  // what the table shows (prefixed by its config when there are several)
  std::vector<std::string> headers;  // unique within the table
  std::vector<std::vector<std::string>> rows;
  std::string config_hash, experiment;  // of the rows behind it
};

// The tables of result rows. Rows of different config_hash are never pooled: each config gets
// its own set of tables, in the order the configs first appear, titled with its hash when there
// are several. machine: cells for csv/json (full precision, "" for no value, fractions rather
// than percent, the speedup interval as speedup_ci_lo, speedup_ci_hi) instead of for reading.
std::vector<Table> result_tables_build(const std::vector<ResultRow>& rows, bool machine = false);
bool table_headers_unique(const Table& t);
// One table: markdown (with its title), LaTeX (title as a comment), CSV (header line and rows
// only: one table per file), or one JSON object (table_json).
std::string table_render(const Table& t, TableFormat format);
// {"name", "title", "config_hash", "experiment", "columns": [...], "rows": [{column: value}]}
// with numbers as numbers and no value as null.
nlohmann::json table_json(const Table& t);
// All tables, one after another (md, latex; csv: one after another without separators, so
// use table_render per table for files), or for json one object {"tables": [...]}.
std::string result_tables_render(const std::vector<ResultRow>& rows, TableFormat format);
// The file name (without .csv) of a table: its name, and its config hash when the rows hold
// several configs.
std::string table_file_stem(const Table& t, bool several_configs);

}  // namespace speclab
