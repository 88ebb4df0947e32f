// speclab result-fields [--json] (hidden): prints docs/result-fields.md, or with --json
// analysis/result_fields.json, both generated from the result row's declaration
// (experiments/results/result_row.h).
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/results/result_row.h"

namespace speclab {

void register_result_fields(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* c = app.add_subcommand(
      "result-fields",
      "print the result row's fields (docs/result-fields.md; --json: analysis/result_fields.json)");
  c->group("");  // hidden from `speclab --help`: a maintainer's tool
  c->add_flag("--json", *json, "the field list as JSON, for the scripts under analysis/");
  c->callback([json] {
    if (*json)
      std::cout << result_fields_json().dump(1) << "\n";
    else
      std::cout << result_fields_markdown();
  });
}

}  // namespace speclab
