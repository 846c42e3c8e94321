#include "common/http/http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/asio/ip/address.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"

namespace tandem::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kMaxBodyBytes = 8 << 20;

bool isIpLiteral(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

bhttp::request<bhttp::string_body> makeRequest(const HttpCall& call, const HttpUrl& url) {
  bhttp::request<bhttp::string_body> req;
  req.method_string(call.method);
  req.target(url.target);
  req.version(11);
  const bool default_port = (url.scheme == "http" && url.port == 80) || (url.scheme == "https" && url.port == 443);
  const std::string host = url.host.find(':') != std::string::npos ? absl::StrCat("[", url.host, "]") : url.host;
  req.set(bhttp::field::host, default_port ? host : absl::StrCat(host, ":", url.port));
  req.set(bhttp::field::user_agent, "tandem");
  req.set(bhttp::field::connection, "close");
  for (const auto& [name, value] : call.headers) req.set(name, value);
  if (!call.body.empty() || call.method == "PUT" || call.method == "POST" || call.method == "PATCH") {
    req.body() = call.body;
    req.prepare_payload();
  }
  return req;
}

HttpReply toReply(bhttp::response_parser<bhttp::string_body>& parser) {
  HttpReply reply;
  reply.status = static_cast<int>(parser.get().result_int());
  reply.body = std::move(parser.get().body());
  return reply;
}

// the exchange's result: the reply, or the step that failed (`step`) and
// the error's message (`failure`). `step` names the step running until the
// reply is in.
struct Outcome {
  std::optional<HttpReply> reply;
  std::string step;
  std::string failure;
};

// connect, (https) handshake, write, read: over a tcp::socket or a
// beast::ssl_stream of one, as a chain of completion handlers on the
// caller's io_context (no coroutines: Debian's clang, which builds the fuzz
// targets, has no Asio awaitables).
template <typename Stream>
class BlockingExchange : public std::enable_shared_from_this<BlockingExchange<Stream>> {
 public:
  BlockingExchange(Stream& stream, Endpoints endpoints, bhttp::request<bhttp::string_body> req, Outcome* out)
      : stream_(stream), endpoints_(std::move(endpoints)), req_(std::move(req)), out_(out) {
    parser_.body_limit(kMaxBodyBytes);
  }

  void start() {
    out_->step = "connect";
    asio::async_connect(beast::get_lowest_layer(stream_), endpoints_,
                        [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                          const tcp::endpoint&) { self->connected(ec); });
  }

 private:
  void connected(const boost::system::error_code& ec) {
    if (failed(ec)) return;
    if constexpr (!std::is_same_v<Stream, tcp::socket>) {
      out_->step = "TLS handshake (is the server's certificate signed by the CA given, for this host?)";
      stream_.async_handshake(asio::ssl::stream_base::client,
                              [self = this->shared_from_this()](const boost::system::error_code& e) { self->send(e); });
    } else {
      send({});
    }
  }
  void send(const boost::system::error_code& ec) {
    if (failed(ec)) return;
    out_->step = "write";
    bhttp::async_write(stream_, req_, [self = this->shared_from_this()](const boost::system::error_code& e, size_t) {
      self->receive(e);
    });
  }
  void receive(const boost::system::error_code& ec) {
    if (failed(ec)) return;
    out_->step = "read";
    bhttp::async_read(stream_, buffer_, parser_,
                      [self = this->shared_from_this()](const boost::system::error_code& e, size_t) { self->done(e); });
  }
  void done(const boost::system::error_code& ec) {
    if (failed(ec)) return;
    out_->reply = toReply(parser_);
    out_->step.clear();
  }
  bool failed(const boost::system::error_code& ec) {
    if (!ec) return false;
    out_->failure = ec.message();
    return true;
  }

  Stream& stream_;
  const Endpoints endpoints_;
  bhttp::request<bhttp::string_body> req_;
  Outcome* out_;
  beast::flat_buffer buffer_;
  bhttp::response_parser<bhttp::string_body> parser_;
};

template <typename Stream>
void startExchange(Stream& stream, const Endpoints& endpoints, bhttp::request<bhttp::string_body> req, Outcome* out) {
  std::make_shared<BlockingExchange<Stream>>(stream, endpoints, std::move(req), out)->start();
}

absl::Status configureTls(asio::ssl::context& ctx, const TlsSettings& tls) {
  boost::system::error_code ec;
  ctx.set_verify_mode(asio::ssl::verify_peer, ec);
  if (tls.ca_pem.empty()) {
    ctx.set_default_verify_paths(ec);
  } else {
    ctx.add_certificate_authority(asio::buffer(tls.ca_pem), ec);
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad CA certificate: ", ec.message()));
  if (tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
    return absl::InvalidArgumentError("a client certificate needs its key (and a key its certificate)");
  }
  if (!tls.client_cert_pem.empty()) {
    ctx.use_certificate_chain(asio::buffer(tls.client_cert_pem), ec);
    if (!ec) ctx.use_private_key(asio::buffer(tls.client_key_pem), asio::ssl::context::pem, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("bad client certificate or key: ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HttpUrl> parseHttpUrl(const std::string& url) {
  HttpUrl out;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "http://")) {
    out.scheme = "http";
    out.port = 80;
  } else if (absl::ConsumePrefix(&rest, "https://")) {
    out.scheme = "https";
    out.port = 443;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("not an http(s) URL: '", url, "'"));
  }
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  out.target = slash == absl::string_view::npos ? "/" : std::string(rest.substr(slash));
  absl::string_view port_text;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("bad host in '", url, "'"));
    out.host = std::string(authority.substr(1, close - 1));
    absl::string_view after = authority.substr(close + 1);
    if (absl::ConsumePrefix(&after, ":")) port_text = after;
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return absl::InvalidArgumentError(absl::StrCat("no host in '", url, "'"));
  if (!port_text.empty() && (!absl::SimpleAtoi(port_text, &out.port) || out.port <= 0 || out.port > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in '", url, "'"));
  }
  return out;
}

absl::StatusOr<Endpoints> systemResolve(const std::string& host, int port, std::chrono::milliseconds) {
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", ec.message()));
  return Endpoints(results.begin(), results.end());
}

absl::StatusOr<HttpReply> httpCall(const HttpCall& call, const HostResolver& resolve) {
  absl::StatusOr<HttpUrl> url = parseHttpUrl(call.url);
  if (!url.ok()) return url.status();
  // the name's resolution counts against the call's timeout like the rest.
  const auto deadline = std::chrono::steady_clock::now() + call.timeout;
  absl::StatusOr<Endpoints> endpoints = resolve(url->host, url->port, call.timeout);
  if (!endpoints.ok()) return endpoints.status();
  const auto left = std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 deadline - std::chrono::steady_clock::now()));
  asio::io_context io;
  boost::system::error_code ec;
  Outcome outcome;
  bhttp::request<bhttp::string_body> req = makeRequest(call, *url);
  std::optional<asio::ssl::context> ctx;
  std::optional<beast::ssl_stream<tcp::socket>> tls_stream;
  std::optional<tcp::socket> socket;
  if (url->scheme == "https") {
    ctx.emplace(asio::ssl::context::tls_client);
    if (absl::Status s = configureTls(*ctx, call.tls); !s.ok()) return s;
    tls_stream.emplace(io, *ctx);
    SSL* ssl = tls_stream->native_handle();
    if (isIpLiteral(url->host)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url->host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, url->host.c_str());
      SSL_set1_host(ssl, url->host.c_str());
    }
    startExchange(*tls_stream, *endpoints, std::move(req), &outcome);
  } else {
    socket.emplace(io);
    startExchange(*socket, *endpoints, std::move(req), &outcome);
  }
  io.run_for(left);
  if (!io.stopped()) {
    // the timeout passed: close the connection and let the handlers unwind.
    if (tls_stream) beast::get_lowest_layer(*tls_stream).close(ec);
    if (socket) socket->close(ec);
    io.run();
    return absl::UnavailableError(absl::StrCat(call.method, " ", call.url, ": no answer within ",
                                               call.timeout.count(), " ms (", outcome.step, ")"));
  }
  if (outcome.reply.has_value()) return std::move(*outcome.reply);
  return absl::UnavailableError(absl::StrCat(call.method, " ", call.url, ": ", outcome.step,
                                             " failed: ", outcome.failure));
}

}  // namespace tandem::http
