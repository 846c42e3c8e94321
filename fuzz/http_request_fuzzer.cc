// HTTP/1.1 requests as the server reads them from a stranger's socket
// (common/http/request_parser.h with the server's default limits): the bytes
// arrive in pieces of any size, several requests may be pipelined, and each
// complete request becomes the HttpRequest a handler sees.
// Input: byte 0 picks the piece size (1..256), the rest is the byte stream.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "common/http/request_parser.h"

namespace bhttp = boost::beast::http;
using tandem::http::HttpRequest;
using tandem::http::HttpServerOptions;
using tandem::http::RequestParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = static_cast<size_t>(data[0]) + 1;
  ++data;
  --size;
  const HttpServerOptions options;
  boost::beast::flat_buffer input;
  size_t fed = 0;
  // the socket delivers the next piece; false at the end of the stream.
  auto receive = [&]() {
    if (fed == size) return false;
    const size_t n = std::min(piece, size - fed);
    auto buf = input.prepare(n);
    std::memcpy(buf.data(), data + fed, n);
    input.commit(n);
    fed += n;
    return true;
  };
  std::optional<RequestParser> parser;
  // as HttpConnection::processInput: parse what is buffered, ask for more
  // when the parser needs it, stop at the first error (400/413/431, close).
  while (true) {
    if (input.size() == 0 && !receive()) return 0;
    if (!parser) {
      parser.emplace();
      tandem::http::configureRequestParser(*parser, options);
    }
    boost::system::error_code ec;
    const size_t used = tandem::http::parseRequestBytes(*parser, input.data(), ec);
    input.consume(used);
    if (ec == bhttp::error::need_more || (!ec && !parser->is_done() && used == 0)) {
      if (!receive()) return 0;
      continue;
    }
    if (ec) return 0;
    if (parser->is_done()) {
      HttpRequest request = tandem::http::takeRequest(*parser, "192.0.2.1:4242");
      if (request.body.size() > options.max_body_bytes) __builtin_trap();
      size_t head = request.method.size() + request.target.size();
      for (const auto& h : request.headers) head += h.name.size() + h.value.size();
      if (head > options.max_header_bytes) __builtin_trap();
      parser.reset();
    }
  }
}
