// tandem: one binary, one subcommand per role (DESIGN.md §2).
#include <string>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/help_defaults.h"
#include "common/crash_report.h"

int main(int argc, char** argv) {
  // a crash names the requests the process held: "tandem router: fatal signal ...".
  static std::string process = argc > 1 ? std::string("tandem ") + argv[1] : "tandem";
  tandem::crash::installCrashReport(process.c_str());
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
