#include "core/error.h"
#include "experiments/cli/commands.h"

namespace speclab {

void register_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "(being built)");
  cmd->callback([] { fail_input("generate: not built yet"); });
}

}  // namespace speclab
