// How the server reads one HTTP/1.1 request: Beast's parser with the
// server's limits (head size, body size), and the HttpRequest a handler sees
// once the parser is done. HttpConnection feeds the parser what the socket
// delivers; fuzz/http_request_fuzzer.cc feeds it arbitrary bytes the same way.
#pragma once

#include <string>

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

// the handler's view of a complete request (parser.is_done()); moves the
// body out of the parser's message.
HttpRequest takeRequest(RequestParser& parser, std::string remote_address);

}  // namespace tandem::http
