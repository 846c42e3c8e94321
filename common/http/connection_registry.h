// The open connections of one server: it keeps each alive while its socket
// is open (a connection streaming a response may have no I/O outstanding),
// counts them, and lets shutdown wait for them to go.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tandem::http {

class HttpConnection;

class ConnectionRegistry {
 public:
  // adds an accepted connection. Returns whether it may be served: false
  // when `max_serving` connections are served already; it is registered
  // anyway (it is open until it has been told so) but not counted as served.
  bool add(std::shared_ptr<HttpConnection> connection, int max_serving);
  // drops a closed connection; no-op when absent.
  void remove(const HttpConnection* connection);

  // connections open now.
  int size() const;
  std::vector<std::shared_ptr<HttpConnection>> snapshot() const;
  // waits until no connection is open or `deadline` passed; returns whether
  // none is open.
  bool waitEmpty(std::chrono::steady_clock::time_point deadline);
  // forgets every connection (after the I/O threads stopped).
  void clear();

 private:
  struct Entry {
    std::shared_ptr<HttpConnection> connection;
    bool served = false;
  };
  mutable std::mutex mu_;
  std::condition_variable empty_;
  std::unordered_map<const HttpConnection*, Entry> connections_;
  int served_ = 0;
};

}  // namespace tandem::http
