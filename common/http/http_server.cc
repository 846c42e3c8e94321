// The HttpServer factory and HttpRequest's helpers. The implementation is
// BeastHttpServer (beast_http_server.h), which says why Beast.
#include "common/http/http_server.h"

#include <strings.h>

#include "common/http/beast_http_server.h"

namespace tandem::http {

std::string HttpRequest::header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (h.name.size() == name.size() && strncasecmp(h.name.data(), name.data(), name.size()) == 0) {
      return h.value;
    }
  }
  return "";
}

absl::StatusOr<HttpServerPtr> HttpServer::start(const HttpServerOptions& options, HttpHandler handler) {
  return BeastHttpServer::create(options, std::move(handler));
}

}  // namespace tandem::http
