#include "tests/cli/cli_runner.h"

#include <sys/wait.h>

#include <cstdio>

#include "common/mapped_file.h"
#include "tests/test_paths.h"

namespace tandem::testing {
namespace {

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

CommandResult runTandem(const std::vector<std::string>& args, const std::string& scratch_dir) {
  std::string cmd = shellQuote(tandemBinary());
  for (const auto& a : args) cmd += " " + shellQuote(a);
  std::string err_path = scratch_dir + "/stderr";
  cmd += " 2>" + shellQuote(err_path) + " </dev/null";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = readFile(err_path).value_or("");
  return r;
}

}  // namespace tandem::testing
