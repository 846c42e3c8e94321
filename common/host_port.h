// Network addresses as tandem's flags and peers spell them: "host:port",
// with brackets around an IPv6 literal ("[::1]:8002").
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tandem {

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};

// "host:port" or "[v6]:port" with port 0..65535; InvalidArgument when it
// does not parse (no colon, empty host, a port that is not a number).
absl::StatusOr<HostPort> parseHostPort(std::string_view text);
// host:port with brackets around an IPv6 literal.
std::string formatHostPort(std::string_view host, int port);

// true when `host` names this machine's loopback only: an address in
// 127.0.0.0/8, ::1 (with or without brackets), or "localhost". A wildcard
// (0.0.0.0, ::, "") or any other name is not.
bool isLoopbackHost(std::string_view host);

}  // namespace tandem
