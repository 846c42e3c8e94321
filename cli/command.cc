#include "cli/command.h"

#include <cstdio>

namespace tandem::cli {

void setAction(CLI::App* cmd, std::function<absl::Status()> fn) {
  cmd->callback([fn = std::move(fn)]() {
    absl::Status status = fn();
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace tandem::cli
