// `tandem planner`: the autoscaling planner's commands (planner/README.md):
// `profile` measures a worker, `simulate` replays a trace with the planner
// in the loop; `run` (the live planner) registers itself here the same way.
#include "cli/command.h"

namespace tandem::cli {

CLI::App* registerPlannerCommand(CLI::App& app) {
  CLI::App* planner = app.add_subcommand("planner", "the autoscaling planner: run it, profile a worker, simulate a trace");
  planner->require_subcommand(1);
  registerPlannerProfileCommand(planner);
  registerPlannerSimulateCommand(planner);
  registerPlannerRunCommand(planner);
  return planner;
}

}  // namespace tandem::cli
