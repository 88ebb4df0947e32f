#include "core/error.h"
#include "experiments/cli/commands.h"

namespace speclab {

void register_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "(being built)");
  cmd->callback([] { fail_input("tokenize: not built yet"); });
}

}  // namespace speclab
