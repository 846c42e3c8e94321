#include "cli/path_flags.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "server/model/weights.h"

namespace tandem::cli {
namespace {

// why `path` is no readable file ("" when it is one).
std::string unreadableFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "no such file";
  if (std::filesystem::is_directory(path, ec)) return "is a directory, not a file";
  std::ifstream in(path);
  if (!in) return absl::StrCat("cannot read it (", std::strerror(errno), ")");
  return "";
}

}  // namespace

absl::Status checkFileFlags(const CLI::App* cmd, std::initializer_list<std::string_view> flags) {
  for (std::string_view flag : flags) {
    const CLI::Option* opt = cmd->get_option_no_throw(std::string(flag));
    if (opt == nullptr) continue;
    for (const std::string& path : opt->results()) {
      if (path.empty()) continue;
      if (std::string why = unreadableFile(path); !why.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " ", path, ": ", why));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status checkModelFlag(std::string_view flag, const std::string& path) {
  absl::Status status = model::ModelWeights::checkPath(path);
  if (status.ok()) return status;
  // checkPath's message starts with the path.
  std::string message(status.message());
  if (message.rfind(path, 0) == 0) message = message.substr(path.size());
  return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " ", path, message));
}

}  // namespace tandem::cli
