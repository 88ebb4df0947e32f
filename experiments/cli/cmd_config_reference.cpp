// speclab config-reference (hidden): prints docs/config-reference.md, generated from the schema
// table the loader checks keys against (experiments/config/config_schema.cpp).
#include <iostream>

#include "experiments/cli/commands.h"
#include "experiments/config/config_schema.h"

namespace speclab {

void register_config_reference(CLI::App& app) {
  auto* c = app.add_subcommand("config-reference",
                               "print the config reference (docs/config-reference.md)");
  c->group("");  // hidden from `speclab --help`: a maintainer's tool
  c->callback([] { std::cout << config_reference_markdown(); });
}

}  // namespace speclab
