// Every subcommand's --help, walked from `tandem --help`: each option that
// takes a value shows its default ("=VALUE", "=none"), says it in its
// description ("default: ..."), or is REQUIRED.
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// the names under "Subcommands:" of a help text.
std::vector<std::string> subcommandsOf(const std::vector<std::string>& help) {
  std::vector<std::string> names;
  bool in_section = false;
  const std::regex entry(R"(^  ([a-z][a-z0-9-]*)\s)");
  for (const std::string& line : help) {
    if (line == "Subcommands:") {
      in_section = true;
      continue;
    }
    std::smatch m;
    if (in_section && std::regex_search(line, m, entry)) names.push_back(m[1]);
    if (in_section && line.empty() && !names.empty()) in_section = false;
  }
  return names;
}

// the options of a help text that take a value and show no default.
std::vector<std::string> optionsWithoutDefault(const std::vector<std::string>& help) {
  std::vector<std::string> missing;
  const std::regex option(R"(^  (-[^ ]*(?: [^ ]+)*?)(?:  +(.*))?$)");
  const std::regex value_type(R"( [A-Z]{3,})");
  for (size_t i = 0; i < help.size(); ++i) {
    std::smatch m;
    if (help[i].rfind("  -", 0) != 0 || !std::regex_match(help[i], m, option)) continue;
    const std::string opts = m[1];
    std::string description = m[2];
    // a long option's description starts on the next line.
    if (description.empty() && i + 1 < help.size() && help[i + 1].rfind("      ", 0) == 0) {
      description = help[i + 1];
    }
    if (!std::regex_search(opts, value_type)) continue;  // a flag
    const bool shown = opts.find('=') != std::string::npos ||
                       opts.find("REQUIRED") != std::string::npos ||
                       description.find("default") != std::string::npos;
    if (!shown) missing.push_back(help[i]);
  }
  return missing;
}

TEST(HelpDefaultsTest, EveryOptionWithAValueShowsItsDefault) {
  const std::string scratch = testing::makeTempDir();
  std::vector<std::vector<std::string>> pending = {{}};
  int commands = 0, options_checked = 0;
  while (!pending.empty()) {
    const std::vector<std::string> path = pending.back();
    pending.pop_back();
    std::vector<std::string> args = path;
    args.push_back("--help");
    const testing::CommandResult r = testing::runTandem(args, scratch);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> help = linesOf(r.out);
    ++commands;
    for (const std::string& line : help) options_checked += line.rfind("  --", 0) == 0 ? 1 : 0;
    std::string name = "tandem";
    for (const std::string& p : path) name += " " + p;
    for (const std::string& line : optionsWithoutDefault(help)) {
      ADD_FAILURE() << name << ": " << line;
    }
    for (const std::string& sub : subcommandsOf(help)) {
      std::vector<std::string> next = path;
      next.push_back(sub);
      pending.push_back(next);
    }
  }
  // every subcommand was reached (tandem, 7 commands and their subcommands).
  EXPECT_GE(commands, 15);
  EXPECT_GT(options_checked, 100);
  std::filesystem::remove_all(scratch);
}

TEST(HelpDefaultsTest, ServeShowsWhatItPassesOnToTheRouterAndWorkers) {
  const std::string scratch = testing::makeTempDir();
  const testing::CommandResult r = testing::runTandem({"serve", "--help"}, scratch);
  ASSERT_EQ(r.exit_code, 0);
  for (const char* shown : {"--max-local-prefill-tokens INT=64", "--kv-transport TEXT=auto",
                            "--prefill-timeout FLOAT=10", "--kv-staging-bytes UINT=1073741824"}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  }
  std::filesystem::remove_all(scratch);
}

// the checker itself finds an option without a default.
TEST(HelpDefaultsTest, TheCheckFindsAnOptionWithoutADefault) {
  const std::vector<std::string> help = {
      "Options:",
      "  -h,--help                   Print this help message and exit",
      "  --threads INT=0             compute threads",
      "  --model TEXT                HF dir or .gguf",
      "  --served-model-name TEXT    the id (default: the file name)",
      "  --no-prefix-cache           disable prefix caching",
      "  --max-pending-requests INT",
      "                              requests in progress before 429",
  };
  EXPECT_EQ(optionsWithoutDefault(help),
            (std::vector<std::string>{"  --model TEXT                HF dir or .gguf",
                                      "  --max-pending-requests INT"}));
}

}  // namespace
}  // namespace tandem
