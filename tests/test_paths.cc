#include "tests/test_paths.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tandem::testing {

std::string sourceDir() { return TANDEM_SOURCE_DIR; }
std::string testDataDir() { return sourceDir() + "/tests/data"; }
std::string storiesGguf() { return sourceDir() + "/models/stories260K/gguf/stories260K.gguf"; }
std::string storiesHfDir() { return sourceDir() + "/models/stories260K/hf"; }
std::string fetchedDataDir() { return TANDEM_FETCHED_DATA_DIR; }
std::string binaryDir() { return TANDEM_BINARY_DIR; }
std::string tandemBinary() { return binaryDir() + "/tandem"; }

namespace {

// the directories this process made, removed when it exits.
struct MadeDirs {
  std::mutex mu;
  pid_t owner = getpid();
  std::vector<std::string> dirs;
};

MadeDirs& madeDirs() {
  static MadeDirs* made = [] {
    auto* m = new MadeDirs;
    std::atexit([] {
      MadeDirs& d = madeDirs();
      std::lock_guard<std::mutex> lock(d.mu);
      if (getpid() != d.owner) return;
      for (const std::string& dir : d.dirs) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
      }
    });
    return m;
  }();
  return *made;
}

}  // namespace

std::string makeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  MadeDirs& made = madeDirs();
  std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.push_back(tmpl);
  return tmpl;
}

}  // namespace tandem::testing
