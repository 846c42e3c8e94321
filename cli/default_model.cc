#include "cli/default_model.h"

#include <cstdlib>
#include <filesystem>

namespace tandem::cli {

std::string defaultModelPath() {
  if (const char* env = std::getenv("TANDEM_MODEL"); env != nullptr && *env != '\0') return env;
  return shippedFilePath("models/stories260K/gguf/stories260K.gguf");
}

std::string shippedFilePath(const std::string& rel) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (std::filesystem::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (std::filesystem::exists(dir / rel)) return (dir / rel).string();
    }
  }
  return TANDEM_SOURCE_DIR "/" + rel;
}

}  // namespace tandem::cli
