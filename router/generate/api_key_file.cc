#include "router/generate/api_key_file.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/mapped_file.h"

namespace tandem::router {
namespace {

constexpr size_t kMinKeyBytes = 8;
constexpr size_t kMaxKeyBytes = 512;
constexpr int64_t kMaxLimit = 1000000000000;

bool printableWithoutSpace(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<ApiKeyEntry>> parseApiKeys(std::string_view text, std::string_view source) {
  std::vector<ApiKeyEntry> entries;
  std::set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_number;
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat("API key file ", absl::string_view(source.data(), source.size()), " line ",
                       line_number, ": ", what));
    };
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    // a comment runs from a field starting with '#' to the end of the line.
    for (size_t i = 0; i < fields.size(); ++i) {
      if (absl::StartsWith(fields[i], "#")) {
        fields.resize(i);
        break;
      }
    }
    if (fields.empty()) continue;
    ApiKeyEntry entry;
    entry.key = std::string(fields[0]);
    if (!printableWithoutSpace(entry.key)) {
      return fail("a key must be printable ASCII without spaces");
    }
    if (entry.key.size() < kMinKeyBytes || entry.key.size() > kMaxKeyBytes) {
      return fail(absl::StrCat("a key must have ", kMinKeyBytes, " to ", kMaxKeyBytes,
                               " characters, this one has ", entry.key.size()));
    }
    for (size_t i = 1; i < fields.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(fields[i], absl::MaxSplits('=', 1));
      int64_t value = 0;
      if (!absl::SimpleAtoi(kv.second, &value) || value < 1 || value > kMaxLimit) {
        // the field is not echoed: a second key pasted on the line would land in the log.
        return fail(absl::StrCat("field ", i + 1, ": a limit is rpm=N or tpm=N, N a positive integer"));
      }
      if (kv.first == "rpm") {
        entry.limit.requests_per_minute = value;
      } else if (kv.first == "tpm") {
        entry.limit.tokens_per_minute = value;
      } else {
        return fail(absl::StrCat("field ", i + 1, ": unknown limit (rpm=N or tpm=N)"));
      }
    }
    if (!seen.insert(entry.key).second) return fail("this key is listed before");
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "API key file ", absl::string_view(source.data(), source.size()),
        " holds no key (an empty file would turn authentication off)"));
  }
  return entries;
}

absl::StatusOr<std::vector<ApiKeyEntry>> readApiKeyFile(const std::string& path) {
  // not readNamedFile: an empty file is parseApiKeys' error, which says why.
  absl::StatusOr<std::string> text = readFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("cannot read the API key file '", path, "'"));
  return parseApiKeys(*text, path);
}

}  // namespace tandem::router
