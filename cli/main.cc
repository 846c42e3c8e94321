// tandem: one binary, one subcommand per role (DESIGN.md §2).
#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/help_defaults.h"

int main(int argc, char** argv) {
  CLI::App app{"tandem: disaggregated LLM inference server"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tandem 0.1.0");
  tandem::cli::registerModelCommand(app);
  tandem::cli::registerGenerateCommand(app);
  tandem::cli::registerServeCommand(app);
  tandem::cli::registerBenchCommand(app);
  tandem::cli::registerRouterCommand(app);
  tandem::cli::registerWorkerCommand(app);
  tandem::cli::registerPlannerCommand(app);
  tandem::cli::showDefaults(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
