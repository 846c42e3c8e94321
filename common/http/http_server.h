// An event-driven HTTP/1.1 server (Boost.Beast over Asio): a few I/O threads
// serve every connection; nothing blocks a thread per connection. Handlers
// may answer at once or later from any thread, and may stream (chunked
// transfer encoding, used for server-sent events).
//
// Protections the server applies before a handler sees a request:
//   - request head (line + headers) larger than max_header_bytes -> 431;
//   - body larger than max_body_bytes -> 413 (Content-Length is checked
//     before the body is read);
//   - a head or body not complete within request_timeout (slowloris) -> 408
//     and the connection is closed;
//   - idle keep-alive connections closed after idle_timeout;
//   - malformed HTTP -> 400 and close;
//   - with HttpServerOptions::tls (HTTPS): a TLS handshake not done within
//     request_timeout -> close; plain HTTP sent to it -> 400 and close.
// Their bodies are JSON shaped by HttpServerOptions::error_body.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/http/error_body.h"
#include "common/tls/certificate_store.h"

namespace tandem::http {

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent, e.g. "/v1/models?x=1"
  std::string path;    // target without the query
  std::vector<HttpHeader> headers;
  std::string body;
  std::string remote_address;  // "ip:port" of the peer

  // the first header named `name` (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
};

// The answer to one request. Thread-safe: every method may be called from
// any thread, at any time, also after the client went away (then the calls
// do nothing). Exactly one of respond() or startStream()..finish() should be
// used; a writer dropped without either answers 500.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // sends a whole response with Content-Length. `headers` are extra headers
  // (Content-Type among them).
  virtual void respond(int status, std::vector<HttpHeader> headers, std::string body) = 0;

  // starts a chunked response; then write() any number of times, then
  // finish(). Writes are queued and sent in order; they never block.
  virtual void startStream(int status, std::vector<HttpHeader> headers) = 0;
  virtual void write(std::string data) = 0;
  virtual void finish() = 0;

  // true once the client closed the connection (or it failed, or the server
  // stopped it). While a response is pending the server keeps reading the
  // socket, so a client that goes away is noticed without a write.
  virtual bool closed() const = 0;
  // `callback` runs once, on an I/O thread, when the connection closes
  // before the response completed (client disconnect); at once if it has
  // already closed. Used to cancel the request's generation.
  virtual void onClose(std::function<void()> callback) = 0;
  // bytes queued by write() and not yet sent (for back-pressure): a
  // producer that finds them above its bound stops writing, or abort()s.
  virtual size_t pendingBytes() const = 0;
  // gives up on the response: the connection is reset now and what is
  // queued is dropped, in the server and in the kernel (a client that
  // stopped reading would never take it), so the client sees the response
  // cut short; onClose callbacks run. For a stream whose client does not
  // keep up. Does nothing once the connection closed.
  virtual void abort() = 0;
};
using ResponseWriterPtr = std::shared_ptr<ResponseWriter>;

// called on an I/O thread for each complete request; must not block.
using HttpHandler = std::function<void(HttpRequest request, ResponseWriterPtr writer)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port (see HttpServer::port)
  int num_threads = 2;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 4 * 1024 * 1024;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};
  // most open connections; more are accepted and answered 503 at once.
  int max_connections = 4096;
  // the body of the server's own error responses (see error_body.h).
  ErrorBodyFormatter error_body = defaultErrorBody;
  // HTTPS (TLS 1.2+) with the store's certificate, re-read by its reload():
  // each new connection handshakes with the certificate the store holds
  // then, open ones keep theirs. null = plain HTTP.
  tls::CertificateStorePtr tls;
};

class HttpServer;
using HttpServerPtr = std::unique_ptr<HttpServer>;

class HttpServer {
 public:
  // binds and listens (so port() is known and clients can connect), then
  // serves on num_threads I/O threads. errors: Unavailable when the address
  // cannot be bound, InvalidArgument for bad options.
  static absl::StatusOr<HttpServerPtr> start(const HttpServerOptions& options,
                                             HttpHandler handler);
  virtual ~HttpServer() = default;

  // the bound port.
  virtual int port() const = 0;
  // stops accepting; connections with a response in progress (streams
  // included) may finish until `grace` has passed, then every connection is
  // closed and the I/O threads are joined. Idempotent. Must not be called
  // from an I/O thread (a handler or an onClose callback): it joins them.
  virtual void shutdown(std::chrono::milliseconds grace) = 0;
  // open connections now (for metrics and tests).
  virtual int numConnections() const = 0;
};

}  // namespace tandem::http
