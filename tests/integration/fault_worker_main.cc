// tandem_fault_worker: `tandem worker` with faults injected through the
// worker command's seam (cli/command.h), for the integration tests of
// faults in real processes. Test-only: the tandem binary has no such flag.
//
//   tandem_fault_worker [--corrupt-kv-block I] worker --role ... (tandem worker's flags)
//
// --corrupt-kv-block I: P corrupts block I of every transfer in transit
// (tests/fakes/corrupt_block_fault.h); D must detect it.
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "server/worker/worker_options.h"
#include "tests/fakes/corrupt_block_fault.h"

int main(int argc, char** argv) {
  CLI::App app{"tandem worker with injected faults (tests only)"};
  app.require_subcommand(1);
  int corrupt_block = -1;
  app.add_option("--corrupt-kv-block", corrupt_block,
                 "P corrupts the block with this index of every transfer it sends");
  tandem::cli::registerWorkerCommand(app, [&](tandem::worker::WorkerOptions& options) {
    if (corrupt_block >= 0) {
      options.kv_faults = std::make_shared<tandem::testing::CorruptBlockFault>(corrupt_block);
    }
  });
  CLI11_PARSE(app, argc, argv);
  return 0;
}
