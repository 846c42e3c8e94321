#include "cli/help_defaults.h"

namespace tandem::cli {

void showDefaults(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    // flags (and --help) take no value; positionals are described apart.
    if (opt->get_items_expected_max() == 0 || !opt->nonpositional()) continue;
    if (opt->get_required() || !opt->get_default_str().empty()) continue;
    opt->capture_default_str();
    // an empty list captures as "[]": nothing, as an empty string is.
    if (opt->get_default_str() == "[]") opt->default_str("");
    if (!opt->get_default_str().empty()) continue;
    if (opt->get_description().find("default") != std::string::npos) continue;
    opt->default_str("none");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) showDefaults(*sub);
}

}  // namespace tandem::cli
