// Bytes on the wire for HTTP/1.1 responses: status line and headers, chunk
// framing, and the server's own error responses. Pure functions, so the
// connection only decides *when* to send and these decide *what*.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/http_server.h"

namespace tandem::http {

// how the body of a response is delimited.
enum class BodyFraming {
  kContentLength,  // Content-Length: n
  kChunked,        // Transfer-Encoding: chunked (HTTP/1.1 streams)
  kUntilClose,     // no length; the connection closes after the body (HTTP/1.0 streams)
  kNone,           // 1xx, 204 and 304 carry neither a body nor a length
};

// what the Connection header of a response says.
enum class ConnectionHeader {
  kOmit,       // HTTP/1.1 keep-alive is the default
  kKeepAlive,  // HTTP/1.0 client that asked for keep-alive
  kClose,
};

// the status line and headers, ending in the blank line. Server and Date are
// added; the caller's framing headers (Content-Length, Transfer-Encoding,
// Connection) are dropped because the server owns framing, and header lines
// holding CR or LF are dropped so a value cannot inject a header.
std::string encodeResponseHead(int status, const std::vector<HttpHeader>& headers,
                               BodyFraming framing, size_t content_length,
                               ConnectionHeader connection);

// one chunk of a chunked body; `data` must not be empty (an empty chunk
// would end the body).
std::string encodeChunk(std::string_view data);

// the last chunk, which ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// "HTTP/1.1 100 Continue", sent before reading a body the client holds back.
inline constexpr std::string_view kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

// a whole response with `body` (JSON) as its error body, after which the
// server closes the connection.
std::string encodeErrorResponse(int status, std::string body);

// whether a response with this status has no body (1xx, 204, 304).
bool statusHasNoBody(int status);

// an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") for the Date header.
std::string httpDate(std::chrono::system_clock::time_point time);

}  // namespace tandem::http
