#include "bench/loadgen/http_fetch.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

absl::StatusOr<HttpEndpoint> parseHttpUrl(const std::string& url) {
  std::string rest = url;
  if (absl::StartsWith(rest, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("--url ", url, ": https is not supported"));
  }
  if (absl::StartsWith(rest, "http://")) rest = rest.substr(7);
  HttpEndpoint ep;
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) ep.base_path = rest.substr(slash);
  while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  // a URL given as ".../v1" names the API root, not a prefix.
  if (absl::EndsWith(ep.base_path, "/v1")) ep.base_path.resize(ep.base_path.size() - 3);
  size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    ep.host = authority.substr(0, colon);
    ep.port = authority.substr(colon + 1);
    int port;
    if (!absl::SimpleAtoi(ep.port, &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("--url ", url, ": bad port"));
    }
  } else {
    ep.host = authority;
    ep.port = "80";
  }
  if (ep.host.size() > 2 && ep.host.front() == '[' && ep.host.back() == ']') {
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  }
  if (ep.host.empty()) return absl::InvalidArgumentError(absl::StrCat("--url ", url, ": no host"));
  return ep;
}

absl::StatusOr<std::string> httpGet(const HttpEndpoint& endpoint, const std::string& path,
                                    std::chrono::milliseconds timeout) {
  net::io_context ioc;
  net::ip::tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  beast::error_code ec;
  auto results = resolver.resolve(endpoint.host, endpoint.port, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("resolve ", endpoint.host, ": ", ec.message()));
  stream.expires_after(timeout);
  std::string target = endpoint.base_path + path;
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, endpoint.host);
  req.set(http::field::user_agent, "tandem-bench");
  http::response<http::string_body> res;
  beast::flat_buffer buffer;
  // a blocking exchange through the async API, so the timeout applies.
  bool failed = false;
  std::string where;
  stream.async_connect(results, [&](beast::error_code e, const auto&) {
    if (e) { failed = true; where = "connect: " + e.message(); return; }
    http::async_write(stream, req, [&](beast::error_code e2, size_t) {
      if (e2) { failed = true; where = "write: " + e2.message(); return; }
      http::async_read(stream, buffer, res, [&](beast::error_code e3, size_t) {
        if (e3) { failed = true; where = "read: " + e3.message(); }
      });
    });
  });
  ioc.run();
  if (failed) {
    return absl::UnavailableError(absl::StrCat("GET http://", endpoint.host, ":", endpoint.port, target, ": ", where));
  }
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  if (res.result_int() != 200) {
    return absl::InternalError(absl::StrCat("GET ", target, ": HTTP ", res.result_int(), ": ", res.body().substr(0, 200)));
  }
  return std::move(res.body());
}

absl::StatusOr<std::string> firstModelId(const HttpEndpoint& endpoint) {
  absl::StatusOr<std::string> body = httpGet(endpoint, "/v1/models");
  if (!body.ok()) return body.status();
  auto j = nlohmann::json::parse(*body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  return absl::InternalError("GET /v1/models: no model listed; give --model");
}

}  // namespace tandem::bench
