// `tandem router`: placeholder until the router process lands (issue 5).
#include "absl/status/status.h"
#include "cli/command.h"

namespace tandem::cli {

void registerRouterCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("router", "(not built yet)");
  setAction(cmd, [] { return absl::UnimplementedError("tandem router is not built yet"); });
}

}  // namespace tandem::cli
