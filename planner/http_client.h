// A small blocking HTTP/1.1 client (Boost.Beast over Asio, OpenSSL for
// https), one request a connection, for what the planner calls: the
// router's /metrics and the Kubernetes API server's scale subresource.
// Every call is bounded by its timeout (name resolution, connect, TLS
// handshake, write and read together; planner/host_resolver.h). Thread-safe: each call owns its I/O context.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::planner {

// `scheme://host:port/target` split; the port defaults to 80 / 443.
struct HttpUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6
  int port = 0;
  std::string target;  // path and query, "/" at least
};
// InvalidArgument for anything but an http(s) URL with a host.
absl::StatusOr<HttpUrl> parseHttpUrl(const std::string& url);

// how an https call checks the server and proves who it is.
struct TlsSettings {
  // PEM of the CA(s) the server's certificate must chain to; empty = the
  // system's default store.
  std::string ca_pem;
  // PEM of a client certificate and its key (mutual TLS), both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{5000};
  TlsSettings tls;  // for https URLs
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// sends `call` and reads the whole reply (bodies up to 8 MiB). Any reply
// the server sent is OK, whatever its status. Errors: InvalidArgument for
// a bad URL or TLS material; Unavailable when the server cannot be reached,
// the TLS handshake or certificate check fails, the connection breaks or
// the timeout passes (the message says which and where); DeadlineExceeded
// when the host name does not resolve within the timeout, ResourceExhausted
// while earlier lookups that timed out still hang (resolveHost's errors).
absl::StatusOr<HttpReply> httpCall(const HttpCall& call);

}  // namespace tandem::planner
