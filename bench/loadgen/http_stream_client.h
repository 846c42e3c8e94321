// StreamClient over the OpenAI HTTP API: POST /v1/completions or
// /v1/chat/completions with "stream": true, read as server-sent events.
//
// The exchanges run on common/http/async_http_client.h: keep-alive
// connections on one I/O thread (a token event costs microseconds), each
// body's bytes timestamped when read, before the SSE parser sees them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/loadgen/http_fetch.h"
#include "bench/loadgen/stream_client.h"
#include "common/http/async_http_client.h"

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

 private:
  HttpStreamClient(HttpEndpoint endpoint, HttpClientOptions options,
                   std::unique_ptr<http::AsyncHttpClient> client);

  const HttpEndpoint endpoint_;
  const HttpClientOptions options_;
  const std::unique_ptr<http::AsyncHttpClient> client_;
};

}  // namespace tandem::bench
