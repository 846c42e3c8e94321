// `tandem bench` (being written).
#include "cli/command.h"

namespace tandem::cli {

void registerBenchCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "(not yet available)");
  setAction(cmd, [] { return absl::UnimplementedError("tandem bench is not built yet"); });
}

}  // namespace tandem::cli
