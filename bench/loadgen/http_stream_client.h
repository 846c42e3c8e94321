// StreamClient over the OpenAI HTTP API: POST /v1/completions or
// /v1/chat/completions with "stream": true, read as server-sent events.
//
// Boost.Beast over one Asio io_context on one thread: every connection is a
// state machine of async operations, so thousands of concurrent streams
// cost sockets and buffers, not threads. One thread is enough (a token
// event costs microseconds) and keeps the timestamps honest: no lock or
// thread hand-off sits between the socket read and its timestamp.
// Finished connections are kept alive and reused; a reused connection the
// server has meanwhile closed is retried once on a fresh one.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/loadgen/http_fetch.h"
#include "bench/loadgen/stream_client.h"

namespace tandem::bench {

struct HttpClientOptions {
  // a request not finished after this fails with "timeout".
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  // sent as "Authorization: Bearer ..." when set.
  std::string api_key;
};

class HttpStreamClient : public StreamClient {
 public:
  // resolves the URL's host and starts the I/O thread. Fails with
  // InvalidArgument for a bad URL and Unavailable when the host does not
  // resolve; connecting happens per request.
  static absl::StatusOr<std::unique_ptr<HttpStreamClient>> create(const std::string& url,
                                                                  const HttpClientOptions& options);
  ~HttpStreamClient() override;

  // StreamClient
  void start(StreamRequest req, std::function<void(StreamResult)> done) override;
  void shutdown() override;

  // opens `n` keep-alive connections before any request and waits for
  // them (up to `timeout`), so a timed run does not count connection setup
  // that a steady client would have done long before. Returns how many
  // connected.
  int warmUp(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // TCP connections opened so far (keep-alive reuse keeps this low).
  int connectionsOpened() const;

  class Impl;

 private:
  explicit HttpStreamClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::bench
