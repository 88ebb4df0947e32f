// speclab table RESULTS [--format md|csv|latex]: paper-style tables from a results file
// (results.jsonl) or a results directory.
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "experiments/cli/commands.h"
#include "experiments/result_tables.h"
#include "experiments/results_store.h"

namespace speclab {

void register_table(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("md");
  auto* c = app.add_subcommand("table", "print tables from results (markdown, CSV or LaTeX)");
  c->add_option("results", *path, "results.jsonl or its directory")->required();
  c->add_option("--format", *format, "md | csv | latex");
  c->callback([path, format] {
    const TableFormat f = table_format_parse(*format);
    std::string file = *path;
    if (std::filesystem::is_directory(file)) file += "/results.jsonl";
    SPECLAB_INPUT_CHECK(std::filesystem::is_regular_file(file), file,
                        ": no such results file (expected results.jsonl or its directory)");
    const auto rows = results_read(file);
    SPECLAB_INPUT_CHECK(!rows.empty(), file, ": no result rows");
    std::printf("%s", result_tables_render(rows, f).c_str());
  });
}

}  // namespace speclab
