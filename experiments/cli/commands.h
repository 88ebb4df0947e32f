// Each speclab verb registers itself on the CLI11 app; one file per verb (cmd_<verb>.cpp).
// A verb's callback throws InputError for bad input (exit 2) and CheckFailed for a failed
// check (exit 1); main() turns those into the exit codes of the CLI contract (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

namespace speclab {

void register_generate(CLI::App& app);
void register_inspect(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_simulate(CLI::App& app);
void register_run(CLI::App& app);
void register_table(CLI::App& app);
void register_check(CLI::App& app);
void register_ngram(CLI::App& app);
void register_merge(CLI::App& app);
void register_config_reference(CLI::App& app);
void register_result_fields(CLI::App& app);
void register_predict(CLI::App& app);

}  // namespace speclab
