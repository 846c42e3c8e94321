#include "common/http/connection_registry.h"

#include <utility>

namespace tandem::http {

bool ConnectionRegistry::add(std::shared_ptr<HttpConnection> connection, int max_serving) {
  std::lock_guard<std::mutex> lock(mu_);
  const HttpConnection* key = connection.get();
  bool served = served_ < max_serving;
  if (served) ++served_;
  connections_[key] = Entry{std::move(connection), served};
  return served;
}

void ConnectionRegistry::remove(const HttpConnection* connection) {
  std::shared_ptr<HttpConnection> last;  // released outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(connection);
    if (it == connections_.end()) return;
    if (it->second.served) --served_;
    last = std::move(it->second.connection);
    connections_.erase(it);
    if (connections_.empty()) empty_.notify_all();
  }
}

int ConnectionRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(connections_.size());
}

std::vector<std::shared_ptr<HttpConnection>> ConnectionRegistry::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<HttpConnection>> all;
  all.reserve(connections_.size());
  for (const auto& [key, entry] : connections_) all.push_back(entry.connection);
  return all;
}

bool ConnectionRegistry::waitEmpty(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return empty_.wait_until(lock, deadline, [this] { return connections_.empty(); });
}

void ConnectionRegistry::clear() {
  std::unordered_map<const HttpConnection*, Entry> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(connections_);
    served_ = 0;
  }
}

}  // namespace tandem::http
