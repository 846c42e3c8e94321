// The one blocking HTTP/1.1 client (Boost.Beast over Asio, OpenSSL for
// https), one request a connection, for whatever asks a server outside a
// request path: the planner (the router's /metrics, the Kubernetes API
// server's scale subresource), `tandem bench` (the model list, /metrics)
// and `tandem worker drain` (the worker's /drain). Every call is bounded by
// its timeout (name resolution, connect, TLS handshake, write and read
// together). Thread-safe: each call owns its I/O context. The load
// generator's streaming client (bench/loadgen/http_stream_client.h) is the
// asynchronous one: keep-alive connections on one I/O thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/asio/ip/tcp.hpp"

namespace tandem::http {

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

using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
// the addresses of `host`:`port` within `timeout` (Unavailable when the
// name does not resolve).
using HostResolver =
    std::function<absl::StatusOr<Endpoints>(const std::string& host, int port, std::chrono::milliseconds timeout)>;

// getaddrinfo through Asio on the caller's thread. It has no timeout of its
// own: fine for loopback and literal addresses; a caller that must not hang
// on a DNS server that does not answer passes its own (planner/host_resolver.h).
absl::StatusOr<Endpoints> systemResolve(const std::string& host, int port, std::chrono::milliseconds timeout);

// sends `call` and reads the whole reply (bodies up to 8 MiB). Any reply
// the server sent is OK, whatever its status. Errors: InvalidArgument for
// a bad URL or TLS material; Unavailable when the server cannot be reached,
// the TLS handshake or certificate check fails, the connection breaks or
// the timeout passes (the message says which and where); whatever
// `resolve` returns when the host does not resolve. No default resolver:
// each caller says how its names resolve.
absl::StatusOr<HttpReply> httpCall(const HttpCall& call, const HostResolver& resolve);

}  // namespace tandem::http
