#include "server/worker/worker_options.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tandem::worker {
namespace {

// Debian's absl::string_view is not std::string_view.
absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

absl::StatusOr<HostPort> parseHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected HOST:PORT, got '", av(text), "'"));
  }
  HostPort out;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  out.host = std::string(host);
  if (!absl::SimpleAtoi(av(text.substr(colon + 1)), &out.port) || out.port < 0 || out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in '", av(text), "'"));
  }
  return out;
}

std::string formatHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return absl::StrCat("[", av(host), "]:", port);
  return absl::StrCat(av(host), ":", port);
}

}  // namespace tandem::worker
