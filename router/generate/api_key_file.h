// API keys with per-key rate limits, as `--api-key-file FILE` gives them.
//
// The file: one key per line, then optional limits, separated by spaces or
// tabs; `#` starts a comment (a whole line, or after a space to the end of
// the line); blank lines are skipped.
//
//   # team a: 60 requests and 100k tokens a minute
//   sk-team-a-4f9c0e1d rpm=60 tpm=100000
//   sk-batch-77d1 tpm=2000000      # tokens only
//   sk-admin-0b3e                  # no limit
//
//   rpm=N  generation requests per minute (completions, chat, gRPC Generate)
//   tpm=N  tokens per minute: each request counts its prompt tokens plus
//          max_tokens for every sequence it asks for (prompts × n)
//
// N is a positive integer (at most 10^12); a limit left out is no limit.
// A key is 8 to 512 printable ASCII characters without spaces (0x21..0x7e)
// and does not start with `#`; a key listed twice is an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::router {

struct ApiKeyLimit {
  int64_t requests_per_minute = 0;  // 0 = no limit
  int64_t tokens_per_minute = 0;    // 0 = no limit
};

struct ApiKeyEntry {
  std::string key;
  ApiKeyLimit limit;
};

// the keys `text` lists (the format above). InvalidArgument naming
// `source` and the line for a malformed line, a duplicate key, or a text
// without any key.
absl::StatusOr<std::vector<ApiKeyEntry>> parseApiKeys(std::string_view text, std::string_view source);

// parseApiKeys of the file at `path`; NotFound when it cannot be read.
absl::StatusOr<std::vector<ApiKeyEntry>> readApiKeyFile(const std::string& path);

}  // namespace tandem::router
