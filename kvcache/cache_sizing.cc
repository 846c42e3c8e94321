#include "kvcache/cache_sizing.h"

#include <charconv>

#include "absl/strings/str_format.h"
#include "common/mapped_file.h"
#include "common/status.h"

namespace tandem::kvcache {

int64_t blocksForBudget(uint64_t budget_bytes, const KvLayout& layout) {
  const uint64_t block_bytes = layout.blockBytes();
  TANDEM_CHECK(block_bytes > 0);
  return static_cast<int64_t>(budget_bytes / block_bytes);
}

absl::StatusOr<uint64_t> parseMemInfoBytes(std::string_view meminfo, std::string_view field) {
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t end = meminfo.find('\n', pos);
    if (end == std::string_view::npos) end = meminfo.size();
    const std::string_view line = meminfo.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= field.size() || line.substr(0, field.size()) != field ||
        line[field.size()] != ':') {
      continue;
    }
    // "   12345 kB": digits, then an optional unit.
    const char* p = line.data() + field.size() + 1;
    const char* last = line.data() + line.size();
    while (p < last && *p == ' ') ++p;
    uint64_t value = 0;
    const auto [num_end, ec] = std::from_chars(p, last, value);
    std::string_view unit(num_end, last - num_end);
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\r')) unit.remove_suffix(1);
    if (ec != std::errc() || (!unit.empty() && unit != "kB")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("meminfo: malformed line \"%s\"", std::string(line)));
    }
    return unit.empty() ? value : value * 1024;
  }
  return absl::NotFoundError(absl::StrFormat("meminfo: no field %s", std::string(field)));
}

absl::StatusOr<int64_t> blocksForMemoryFraction(double fraction, const KvLayout& layout,
                                                const std::string& meminfo_path) {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("kv cache memory fraction must be in (0, 1], got %g", fraction));
  }
  ASSIGN_OR_RETURN(const std::string text, readFile(meminfo_path));
  auto available = parseMemInfoBytes(text, "MemAvailable");
  if (absl::IsNotFound(available.status())) {
    available = parseMemInfoBytes(text, "MemFree");
  }
  if (!available.ok()) return available.status();
  const auto budget = static_cast<uint64_t>(static_cast<double>(*available) * fraction);
  return blocksForBudget(budget, layout);
}

}  // namespace tandem::kvcache
