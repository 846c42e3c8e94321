// A tiny blocking HTTP/1.1 client over a POSIX socket, for tests that need
// to send exactly the bytes they choose (partial heads, trickled bytes,
// pipelined requests) and read exactly what the server sent.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::http::testing {

struct RawResponse {
  int status = 0;
  std::string version;  // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                 // chunked bodies decoded
  std::vector<std::string> chunks;  // the chunks as received (chunked only)

  // the first header named `name` (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
  bool hasHeader(std::string_view name) const;
};

class RawClient {
 public:
  // connects to 127.0.0.1:port; nullptr when the connection is refused.
  static std::unique_ptr<RawClient> connect(int port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // sends all of `bytes`; false when the connection failed.
  bool send(std::string_view bytes);

  // reads a status line and headers (not a body). nullopt on timeout, or
  // when the server closed first.
  std::optional<RawResponse> readHead(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // reads the next chunk of a chunked body: its data, "" for the last chunk
  // (trailers consumed), nullopt on timeout or close.
  std::optional<std::string> readChunk(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // reads a whole response; the body framed by Content-Length, chunked
  // encoding, or (when neither) the connection's close. A HEAD or 1xx, 204
  // or 304 response has no body: pass `no_body`.
  std::optional<RawResponse> readResponse(std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                          bool no_body = false);

  // waits for the server to close the connection, discarding what arrives.
  // True when it closed (EOF or reset) within `timeout`.
  bool waitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // true when the server has neither sent anything nor closed within `timeout`.
  bool staysQuiet(std::chrono::milliseconds timeout);
  // bytes received and not yet consumed by a read above.
  const std::string& buffered() const { return buffer_; }

  // closes the socket now (a client disconnect).
  void close();

 private:
  explicit RawClient(int fd) : fd_(fd) {}
  // receives more bytes into buffer_ before `deadline`; false on timeout,
  // EOF or error.
  bool fill(std::chrono::steady_clock::time_point deadline);
  std::optional<std::string> readLine(std::chrono::steady_clock::time_point deadline);
  bool readExactly(size_t n, std::string* out, std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace tandem::http::testing
