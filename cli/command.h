// How subcommands plug into the one `tandem` binary: each registers its
// CLI11 subcommand and a callback; errors come back as a status that main()
// prints as "error: ..." with exit code 1.
#pragma once

#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"

namespace tandem::worker {
struct WorkerOptions;
}  // namespace tandem::worker

namespace tandem::cli {

// runs `fn` as the subcommand's action, turning its status into the exit
// code: throws CLI::RuntimeError(1) after printing the message on failure.
void setAction(CLI::App* cmd, std::function<absl::Status()> fn);

void registerModelCommand(CLI::App& app);
void registerGenerateCommand(CLI::App& app);
void registerServeCommand(CLI::App& app);
void registerBenchCommand(CLI::App& app);
void registerRouterCommand(CLI::App& app);
// `tandem router simulate` (under the router's command).
void registerRouterSimulateCommand(CLI::App* router);
// `tandem planner` and its subcommands; returns the parent so that other
// subcommands (`run`) can register under it the same way.
CLI::App* registerPlannerCommand(CLI::App& app);
// `tandem planner profile` (cli/planner_profile_command.cc).
void registerPlannerProfileCommand(CLI::App* planner);
// `tandem planner simulate` (cli/planner_simulate_command.cc).
void registerPlannerSimulateCommand(CLI::App* planner);
// `tandem planner run` (under the planner's command).
void registerPlannerRunCommand(CLI::App* planner);
// `customize`, when set, edits the worker's options after its flags were
// read: the seam through which a test-only binary injects faults
// (tests/integration/fault_worker_main.cc, docs/design/testing.md). `tandem`
// passes none.
// `tandem worker drain` (under the worker's command): a worker pod's preStop.
void registerWorkerDrainCommand(CLI::App* worker);
void registerWorkerCommand(CLI::App& app,
                           std::function<void(worker::WorkerOptions&)> customize = nullptr);

}  // namespace tandem::cli
