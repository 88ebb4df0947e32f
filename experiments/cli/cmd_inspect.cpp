#include "core/error.h"
#include "experiments/cli/commands.h"

namespace speclab {

void register_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "(being built)");
  cmd->callback([] { fail_input("inspect: not built yet"); });
}

}  // namespace speclab
