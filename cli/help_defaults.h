// Every option that takes a value shows its default in --help: one pass
// over the whole command tree once every subcommand is registered (main),
// so a new flag cannot forget it. An option bound to a variable shows the
// variable's value at registration (CLI11's capture_default_str); one whose
// description already says its default ("(default: ...)") keeps that; any
// other shows "=none" (nothing unless given). Required options are marked
// REQUIRED by CLI11 itself.
#pragma once

#include "CLI/CLI.hpp"

namespace tandem::cli {

void showDefaults(CLI::App& app);

}  // namespace tandem::cli
