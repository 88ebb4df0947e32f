// speclab table RESULTS [--format md|csv|latex|json] [--table NAME] [--out DIR]: paper-style
// tables from a results file (results.jsonl) or a results directory.
//
// Rows of different configs (config_hash) are never pooled: each config gets its own tables
// (experiments/results/result_tables.h). CSV is one tidy table per file: with --out DIR every table
// is written to DIR/<name>.csv (DIR/<name>-<config_hash>.csv when the rows hold several configs);
// to stdout, CSV needs exactly one table, chosen with --table NAME when there are more.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/output_file.h"
#include "experiments/cli/commands.h"
#include "experiments/results/result_tables.h"
#include "experiments/results/results_store.h"

namespace speclab {

namespace {

struct TableArgs {
  std::string path, format = "md", table, out;
};

void run_table(const TableArgs& a) {
  const TableFormat f = table_format_parse(a.format);
  std::string file = a.path;
  if (std::filesystem::is_directory(file)) file += "/results.jsonl";
  std::error_code ec;  // something else there (a FIFO, a folder): results_read names it
  SPECLAB_INPUT_CHECK(std::filesystem::exists(file, ec), file,
                      ": no such results file (expected results.jsonl or its directory)");
  const auto rows = results_read(file);
  SPECLAB_INPUT_CHECK(!rows.empty(), file, ": no result rows");
  const bool machine = f == TableFormat::kCsv || f == TableFormat::kJson;
  std::vector<Table> tables = result_tables_build(rows, machine);
  std::set<std::string> names, configs;
  for (const auto& t : tables) {
    names.insert(t.name);
    configs.insert(t.config_hash);
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  if (!a.table.empty()) {
    SPECLAB_INPUT_CHECK(names.count(a.table), "--table: '", a.table, "' is not a table of ", file,
                        " (it has: ", known, ")");
    std::vector<Table> chosen;
    for (auto& t : tables)
      if (t.name == a.table) chosen.push_back(std::move(t));
    tables = std::move(chosen);
  }
  const bool several_configs = configs.size() > 1;
  if (!a.out.empty()) {
    output_dir_create(a.out, "tables (--out DIR)");
    const char* ext = f == TableFormat::kCsv     ? ".csv"
                      : f == TableFormat::kJson  ? ".json"
                      : f == TableFormat::kLatex ? ".tex"
                                                 : ".md";
    for (const auto& t : tables) {
      const std::string path = a.out + "/" + table_file_stem(t, several_configs) + ext;
      output_file_write_atomic(
          path, f == TableFormat::kJson ? table_json(t).dump(1) + "\n" : table_render(t, f));
      std::printf("%s\n", path.c_str());
    }
    return;
  }
  if (f == TableFormat::kCsv) {
    SPECLAB_INPUT_CHECK(tables.size() == 1, file, ": ", tables.size(),
                        " tables; CSV holds one table per file: pass --out DIR (one file per "
                        "table) or --table NAME (one of: ",
                        known, several_configs ? "; several configs, so use --out DIR" : "", ")");
    std::printf("%s", table_render(tables[0], f).c_str());
    return;
  }
  if (f == TableFormat::kJson) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : tables) all.push_back(table_json(t));
    std::printf("%s\n", nlohmann::json{{"tables", all}}.dump(1).c_str());
    return;
  }
  for (const auto& t : tables) std::printf("%s", table_render(t, f).c_str());
}

}  // namespace

void register_table(CLI::App& app) {
  auto a = std::make_shared<TableArgs>();
  auto* c = app.add_subcommand("table", "print tables from results (markdown, CSV, LaTeX, JSON)");
  c->add_option("results", a->path, "results.jsonl or its directory")->required();
  c->add_option("--format", a->format, "md | csv | latex | json");
  c->add_option("--table", a->table,
                "only this table: acceptance | speedup | gamma | tree | synthetic | cost");
  c->add_option("--out", a->out, "write one file per table into DIR");
  c->callback([a] { run_table(*a); });
}

}  // namespace speclab
