// Path flags are checked when a command starts, before it starts anything
// (a child process, a listener, a model load): a missing or unreadable file
// is one clear error naming the flag, not a failure deep inside a child.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"

namespace tandem::cli {

// each of `flags` given on `cmd` (with a non-empty value) names a regular
// file this process can read. InvalidArgument "FLAG PATH: why" otherwise.
absl::Status checkFileFlags(const CLI::App* cmd, std::initializer_list<std::string_view> flags);

// `path` (the value of `flag`, defaults applied) is a model
// (model::ModelWeights::checkPath). InvalidArgument "FLAG PATH: why".
absl::Status checkModelFlag(std::string_view flag, const std::string& path);

}  // namespace tandem::cli
