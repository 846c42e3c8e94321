// `tandem worker`: placeholder until the worker process lands (issue 5).
#include "absl/status/status.h"
#include "cli/command.h"

namespace tandem::cli {

void registerWorkerCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("worker", "(not built yet)");
  setAction(cmd, [] { return absl::UnimplementedError("tandem worker is not built yet"); });
}

}  // namespace tandem::cli
