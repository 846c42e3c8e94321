// tandem: one binary, one subcommand per role (DESIGN.md §2).
#include <cstdio>

#include "CLI/CLI.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tandem: disaggregated LLM inference server"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tandem 0.1.0");
  CLI11_PARSE(app, argc, argv);
  return 0;
}
