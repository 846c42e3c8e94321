#include "router/cluster/worker_discovery.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tandem::router::cluster {

absl::StatusOr<std::vector<std::string>> readWorkersFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the workers file ", path));
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    std::string address(text);
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(std::move(address));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> resolveWorkersDns(const std::string& name_port) {
  const size_t colon = name_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == name_port.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers-dns wants NAME:PORT, got '", name_port, "'"));
  }
  const std::string name = name_port.substr(0, colon);
  const std::string port = name_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &result); rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot resolve ", name, ": ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(result, freeaddrinfo);
  std::vector<std::string> out;
  for (const addrinfo* a = result; a != nullptr; a = a->ai_next) {
    char ip[INET6_ADDRSTRLEN] = {};
    std::string address;
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, ip, sizeof ip);
      address = absl::StrCat(ip, ":", port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr, ip, sizeof ip);
      address = absl::StrCat("[", ip, "]:", port);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(std::move(address));
  }
  return out;
}

WorkerDiscovery::WorkerDiscovery(WorkerDiscoveryOptions options, WorkerPool* pool)
    : options_(std::move(options)), pool_(pool) {}

WorkerDiscovery::~WorkerDiscovery() { stop(); }

absl::Status WorkerDiscovery::start() {
  if (!options_.workers_dns.empty() && options_.workers_dns.rfind(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers-dns wants NAME:PORT, got '", options_.workers_dns, "'"));
  }
  if (!options_.static_workers.empty()) pool_->setDiscovered(kStaticList, options_.static_workers);
  if (options_.workers_file.empty() && options_.workers_dns.empty()) return absl::OkStatus();
  refreshFile();
  refreshDns();
  refresher_ = std::make_unique<TimerQueue>("discovery");
  if (!options_.workers_file.empty()) {
    refresher_->runEvery(options_.file_interval, [this] { refreshFile(); });
  }
  if (!options_.workers_dns.empty()) {
    refresher_->runEvery(options_.dns_interval, [this] { refreshDns(); });
  }
  return absl::OkStatus();
}

void WorkerDiscovery::stop() {
  if (refresher_ != nullptr) refresher_->stop();
}

void WorkerDiscovery::refreshFile() {
  if (options_.workers_file.empty()) return;
  absl::StatusOr<std::vector<std::string>> addresses = readWorkersFile(options_.workers_file);
  // a file being rewritten may be missing for a moment: keep what it listed.
  if (addresses.ok()) pool_->setDiscovered(kWorkersFile, *addresses);
}

void WorkerDiscovery::refreshDns() {
  if (options_.workers_dns.empty()) return;
  absl::StatusOr<std::vector<std::string>> addresses = resolveWorkersDns(options_.workers_dns);
  // a name that does not resolve now (no endpoints yet) lists no workers.
  if (addresses.ok()) {
    pool_->setDiscovered(kDns, *addresses);
  } else if (absl::IsNotFound(addresses.status())) {
    pool_->setDiscovered(kDns, {});
  }
}

}  // namespace tandem::router::cluster
