#include "server/kv_transport/endpoint.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem::kv_transport {

namespace {
constexpr absl::string_view kGrpcScheme = "grpc://";
constexpr absl::string_view kShmScheme = "shm://";
constexpr absl::string_view kUcxScheme = "ucx://";
constexpr absl::string_view kBootIdParam = "?boot_id=";
}  // namespace

std::string_view transportName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kShm:
      return "shm";
    case TransportKind::kUcx:
      return "ucx";
    case TransportKind::kGrpc:
      break;
  }
  return "grpc";
}

std::string formatEndpoint(const Endpoint& e) {
  if (e.kind == TransportKind::kGrpc) return absl::StrCat(kGrpcScheme, e.address);
  if (e.kind == TransportKind::kUcx) return absl::StrCat(kUcxScheme, e.address);
  return absl::StrCat(kShmScheme, e.address, kBootIdParam, e.boot_id);
}

absl::StatusOr<std::vector<Endpoint>> parseEndpoints(std::string_view list) {
  std::vector<Endpoint> out;
  for (absl::string_view item :
       absl::StrSplit(absl::string_view(list.data(), list.size()), ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    Endpoint e;
    if (absl::ConsumePrefix(&item, kGrpcScheme)) {
      e.kind = TransportKind::kGrpc;
      e.address = std::string(item);
    } else if (absl::ConsumePrefix(&item, kShmScheme)) {
      e.kind = TransportKind::kShm;
      size_t q = item.find(kBootIdParam);
      e.address = std::string(item.substr(0, q));
      if (q != absl::string_view::npos) e.boot_id = std::string(item.substr(q + kBootIdParam.size()));
    } else if (absl::ConsumePrefix(&item, kUcxScheme)) {
      e.kind = TransportKind::kUcx;
      e.address = std::string(item);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown KV endpoint scheme in '", item, "'"));
    }
    if (e.address.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("KV endpoint '", item, "' has no address"));
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) return absl::InvalidArgumentError("empty KV endpoint list");
  return out;
}

const std::string& localBootId() {
  static const std::string id = [] {
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::string s;
    if (f && std::getline(f, s) && !s.empty()) return s;
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return absl::StrCat("host-", host);
  }();
  return id;
}

}  // namespace tandem::kv_transport
