#include "common/http/request_parser.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tandem::http {

void configureRequestParser(RequestParser& parser, const HttpServerOptions& options) {
  size_t header_limit = std::min<size_t>(options.max_header_bytes, UINT32_MAX);
  parser.header_limit(static_cast<uint32_t>(header_limit));
  parser.body_limit(options.max_body_bytes);
  parser.eager(true);
}

size_t parseRequestBytes(RequestParser& parser, boost::asio::const_buffer input,
                         boost::system::error_code& ec) {
  return parser.put(input, ec);
}

HttpRequest takeRequest(RequestParser& parser, std::string remote_address) {
  auto& message = parser.get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.path = request.target.substr(0, request.target.find('?'));
  for (const auto& field : message) {
    request.headers.push_back(HttpHeader{std::string(field.name_string()), std::string(field.value())});
  }
  request.body = std::move(message.body());
  request.remote_address = std::move(remote_address);
  return request;
}

}  // namespace tandem::http
