#include "tests/test_paths.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace tandem::testing {

std::string sourceDir() { return TANDEM_SOURCE_DIR; }
std::string testDataDir() { return sourceDir() + "/tests/data"; }
std::string storiesGguf() { return sourceDir() + "/models/stories260K/gguf/stories260K.gguf"; }
std::string storiesHfDir() { return sourceDir() + "/models/stories260K/hf"; }
std::string fetchedDataDir() { return TANDEM_FETCHED_DATA_DIR; }
std::string binaryDir() { return TANDEM_BINARY_DIR; }
std::string tandemBinary() { return binaryDir() + "/tandem"; }

std::string makeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

}  // namespace tandem::testing
