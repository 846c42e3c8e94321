#include "tests/common/tls/tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace tandem::tls::testing {
namespace {

std::string lastSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "no OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

}  // namespace

std::string HttpReply::header(std::string_view name) const {
  size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string::npos) {
    at += 2;
    const size_t colon = head.find(':', at);
    const size_t end = head.find("\r\n", at);
    if (colon == std::string::npos || (end != std::string::npos && colon > end)) continue;
    if (colon - at == name.size() && strncasecmp(head.data() + at, name.data(), name.size()) == 0) {
      size_t value = colon + 1;
      while (value < head.size() && head[value] == ' ') ++value;
      return head.substr(value, (end == std::string::npos ? head.size() : end) - value);
    }
  }
  return "";
}

std::unique_ptr<TlsClient> TlsClient::connect(int port, const TlsClientOptions& options,
                                              std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<TlsClient> {
    if (error != nullptr) *error = why;
    return nullptr;
  };
  std::unique_ptr<TlsClient> client(new TlsClient());
  client->fd_ = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{static_cast<time_t>(options.timeout.count() / 1000),
             static_cast<suseconds_t>((options.timeout.count() % 1000) * 1000)};
  setsockopt(client->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(client->fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(client->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail("connect failed");
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  client->ctx_ = ctx;
  if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
    return fail("cannot load the CA: " + lastSslError());
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return fail("cannot load the client certificate: " + lastSslError());
    }
  }
  SSL* ssl = SSL_new(ctx);
  client->ssl_ = ssl;
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
  SSL_set_fd(ssl, client->fd_);
  if (SSL_connect(ssl) != 1) return fail("handshake failed: " + lastSslError());
  return client;
}

TlsClient::~TlsClient() {
  if (ssl_ != nullptr) SSL_free(static_cast<SSL*>(ssl_));
  if (ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
  if (fd_ >= 0) close(fd_);
}

bool TlsClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const int n = SSL_write(static_cast<SSL*>(ssl_), bytes.data(), static_cast<int>(bytes.size()));
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool TlsClient::fill() {
  char chunk[16384];
  const int n = SSL_read(static_cast<SSL*>(ssl_), chunk, sizeof(chunk));
  if (n <= 0) {
    ERR_clear_error();
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

std::optional<std::string> TlsClient::readLine() {
  size_t end;
  while ((end = buffer_.find("\r\n")) == std::string::npos) {
    if (!fill()) return std::nullopt;
  }
  std::string line = buffer_.substr(0, end);
  buffer_.erase(0, end + 2);
  return line;
}

bool TlsClient::readExactly(size_t n, std::string* out) {
  while (buffer_.size() < n) {
    if (!fill()) return false;
  }
  out->append(buffer_, 0, n);
  buffer_.erase(0, n);
  return true;
}

std::optional<HttpReply> TlsClient::readResponse() {
  HttpReply reply;
  std::optional<std::string> status = readLine();
  if (!status || status->size() < 12) return std::nullopt;
  reply.status = std::atoi(status->c_str() + 9);
  reply.head = *status;
  for (;;) {
    std::optional<std::string> line = readLine();
    if (!line) return std::nullopt;
    if (line->empty()) break;
    reply.head += "\r\n" + *line;
  }
  if (strcasecmp(reply.header("Transfer-Encoding").c_str(), "chunked") == 0) {
    for (;;) {
      std::optional<std::string> size_line = readLine();
      if (!size_line) return std::nullopt;
      const size_t size = std::strtoul(size_line->c_str(), nullptr, 16);
      if (size == 0) {
        readLine();  // the empty line after the last chunk
        break;
      }
      if (!readExactly(size, &reply.body)) return std::nullopt;
      readLine();
    }
  } else if (std::string length = reply.header("Content-Length"); !length.empty()) {
    if (!readExactly(std::strtoul(length.c_str(), nullptr, 10), &reply.body)) return std::nullopt;
  }
  return reply;
}

bool TlsClient::waitClosed() {
  char chunk[4096];
  for (;;) {
    const int n = SSL_read(static_cast<SSL*>(ssl_), chunk, sizeof(chunk));
    if (n > 0) continue;
    const int err = SSL_get_error(static_cast<SSL*>(ssl_), n);
    ERR_clear_error();
    // a close (with or without close_notify) rather than the timeout.
    return err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SSL ||
           (err == SSL_ERROR_SYSCALL && errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

std::string TlsClient::peerCommonName() const {
  X509* cert = SSL_get1_peer_certificate(static_cast<SSL*>(ssl_));
  if (cert == nullptr) return "";
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
  X509_free(cert);
  return buf;
}

long TlsClient::peerSerial() const {
  X509* cert = SSL_get1_peer_certificate(static_cast<SSL*>(ssl_));
  if (cert == nullptr) return -1;
  const long serial = ASN1_INTEGER_get(X509_get_serialNumber(cert));
  X509_free(cert);
  return serial;
}

}  // namespace tandem::tls::testing
