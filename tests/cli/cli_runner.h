// Runs the real tandem binary as a subprocess and captures what it prints.
#pragma once

#include <string>
#include <vector>

namespace tandem::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// runs `tandem ARGS...` with stdin from /dev/null; `scratch_dir` holds the
// captured stderr.
CommandResult runTandem(const std::vector<std::string>& args, const std::string& scratch_dir);

}  // namespace tandem::testing
