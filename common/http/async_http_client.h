// The asynchronous side of tandem's one HTTP client (http_client.h is the
// blocking one): keep-alive connections to one server, every exchange a
// state machine of Beast/Asio operations on one I/O thread, so thousands
// of concurrent streams cost sockets and buffers, not threads. A response
// body is handed over as it is read, with the time it was read (taken
// before anything parses it, and with no lock or thread hand-off between
// the socket read and the timestamp): `tandem bench`'s OpenAI streaming
// client (bench/loadgen/http_stream_client.h) measures with it. Finished
// connections are kept and reused; a reused connection the server has
// meanwhile closed is retried once on a fresh one.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::http {

struct AsyncHttpOptions {
  // an exchange not finished after this fails with kTimeout.
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  std::string user_agent = "tandem";
};

// one request: POST `target` with `body` and `headers` (Host, User-Agent,
// Content-Length and keep-alive are set).
struct AsyncHttpRequest {
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// how an exchange ended when it got no whole response.
struct AsyncHttpFailure {
  enum Kind {
    kConnect,    // the connection could not be made
    kRead,       // writing the request or reading the response broke
    kTimeout,    // request_timeout passed
    kCancelled,  // shutdown()
  } kind;
  std::string message;  // what failed and why
};

// what one exchange tells its caller, in order, on the client's I/O thread
// (each call must be quick and must not block): onStart, then onHead and
// onBody as the response arrives, then exactly one of onComplete and
// onFailure.
class AsyncHttpHandler {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~AsyncHttpHandler() = default;

  // the exchange starts now (it connects, or writes on a kept connection).
  virtual void onStart(Clock::time_point now) = 0;
  // the status line and headers arrived.
  virtual void onHead(int status) = 0;
  // the next bytes of the body (their encoding undone), read at `read_at`.
  virtual void onBody(std::string_view bytes, Clock::time_point read_at) = 0;
  // the body ended. True keeps the connection for another exchange (when
  // the server allows it).
  virtual bool onComplete() = 0;
  virtual void onFailure(AsyncHttpFailure failure) = 0;
};

class AsyncHttpClient {
 public:
  // resolves `host` and starts the I/O thread; Unavailable when the host
  // does not resolve. Connecting happens per exchange.
  static absl::StatusOr<std::unique_ptr<AsyncHttpClient>> create(const std::string& host, const std::string& port,
                                                                 AsyncHttpOptions options);
  // shutdown().
  ~AsyncHttpClient();

  // starts `request` and returns at once; `handler` is kept until its
  // onComplete or onFailure returned. After shutdown() it fails at once
  // with kCancelled (on the caller's thread). Thread-safe.
  void start(AsyncHttpRequest request, std::shared_ptr<AsyncHttpHandler> handler);
  // cancels what is in flight (kCancelled) and joins the I/O thread.
  // Idempotent.
  void shutdown();

  // opens `n` keep-alive connections before any exchange and waits for
  // them (up to `timeout`), so a timed run does not count connection setup
  // that a steady client would have done long before. Returns how many
  // connected.
  int warmUp(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // TCP connections opened so far (keep-alive reuse keeps this low).
  int connectionsOpened() const;

  class Impl;

 private:
  explicit AsyncHttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::http
