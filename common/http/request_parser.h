// How the server reads one HTTP/1.1 request: Beast's parser with the
// server's limits (head size, body size), and the HttpRequest a handler sees
// once the parser is done. HttpConnection feeds the parser what the socket
// delivers; fuzz/http_request_fuzzer.cc feeds it arbitrary bytes the same way.
#pragma once

#include <cstddef>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/http/http_server.h"

namespace tandem::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// sets a fresh parser's limits from `options`: a head larger than
// max_header_bytes fails with error::header_limit, a body larger than
// max_body_bytes (by Content-Length, before it is read, or as chunks arrive)
// with error::body_limit. Eager: put() parses the body with the head.
void configureRequestParser(RequestParser& parser, const HttpServerOptions& options);

// parses the bytes received and not yet consumed (`input`); returns how many
// it consumed. `ec`: need_more (wait for more bytes, then call again with the
// unconsumed rest and what came), header_limit, body_limit or another parse
// error. Beast's debug assertions are off in this library
// (BOOST_DISABLE_ASSERTS): Boost 1.74's chunk parser asserts on a valid final
// chunk that arrives a few bytes at a time (boostorg/beast#2861, found by
// fuzz/http_request_fuzzer.cc); release builds never had them.
size_t parseRequestBytes(RequestParser& parser, boost::asio::const_buffer input,
                         boost::system::error_code& ec);

// the handler's view of a complete request (parser.is_done()); moves the
// body out of the parser's message.
HttpRequest takeRequest(RequestParser& parser, std::string remote_address);

}  // namespace tandem::http
