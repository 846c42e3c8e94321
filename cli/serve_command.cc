// `tandem serve` (being written).
#include "cli/command.h"

namespace tandem::cli {

void registerServeCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("serve", "(not yet available)");
  setAction(cmd, [] { return absl::UnimplementedError("tandem serve is not built yet"); });
}

}  // namespace tandem::cli
