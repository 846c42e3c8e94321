#include "bench/loadgen/http_fetch.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/http/http_client.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

absl::StatusOr<HttpEndpoint> parseHttpUrl(const std::string& url) {
  if (absl::StartsWith(url, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("--url ", url, ": https is not supported"));
  }
  absl::StatusOr<tandem::http::HttpUrl> parsed =
      tandem::http::parseHttpUrl(absl::StartsWith(url, "http://") ? url : "http://" + url);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("--url: ", parsed.status().message()));
  HttpEndpoint ep{.host = parsed->host, .port = std::to_string(parsed->port), .base_path = parsed->target};
  while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  // a URL given as ".../v1" names the API root, not a prefix.
  if (absl::EndsWith(ep.base_path, "/v1")) ep.base_path.resize(ep.base_path.size() - 3);
  return ep;
}

absl::StatusOr<std::string> httpGet(const HttpEndpoint& endpoint, const std::string& path,
                                    std::chrono::milliseconds timeout) {
  const std::string host = endpoint.host.find(':') != std::string::npos ? absl::StrCat("[", endpoint.host, "]")
                                                                        : endpoint.host;
  const std::string url = absl::StrCat("http://", host, ":", endpoint.port, endpoint.base_path, path);
  absl::StatusOr<tandem::http::HttpReply> reply =
      tandem::http::httpCall({.url = url, .timeout = timeout}, tandem::http::systemResolve);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return absl::InternalError(absl::StrCat("GET ", url, ": HTTP ", reply->status, ": ", reply->body.substr(0, 200)));
  }
  return std::move(reply->body);
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
