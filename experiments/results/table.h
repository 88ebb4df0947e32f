// A table of text cells and its renderings (markdown, CSV, LaTeX, JSON): what the result
// tables (result_tables.h) and the per-category tables (category_tables.h) are built as.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

bool table_headers_unique(const Table& t);
// One table: markdown (with its title), LaTeX (title as a comment), CSV (header line and rows
// only: one table per file), or one JSON object (table_json).
std::string table_render(const Table& t, TableFormat format);
// {"name", "title", "config_hash", "experiment", "columns": [...], "rows": [{column: value}]}
// with numbers as numbers and no value as null.
nlohmann::json table_json(const Table& t);
// The file name (without .csv) of a table: its name, and its config hash when the rows hold
// several configs.
std::string table_file_stem(const Table& t, bool several_configs);

// A number as a table cell: fixed `digits` for reading ("-" for NaN), or for machines (csv,
// json) every digit that matters ("" for NaN).
std::string table_number(double v, int digits, bool machine = false);

}  // namespace speclab
