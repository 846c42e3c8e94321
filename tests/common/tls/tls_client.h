// A tiny blocking TLS client (OpenSSL over a POSIX socket) for tests of
// the HTTPS server: it verifies the server against a CA file, can present
// a client certificate, tells which certificate the server presented, and
// reads HTTP/1.1 responses (Content-Length or chunked bodies).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::tls::testing {

struct TlsClientOptions {
  std::string ca_file;    // the server must chain to it
  std::string cert_file;  // a client certificate to present; "" = none
  std::string key_file;
  std::chrono::milliseconds timeout{30000};  // every read and write
};

struct HttpReply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // chunked bodies decoded

  // the value of header `name` (case-insensitive); "" when absent.
  std::string header(std::string_view name) const;
};

class TlsClient {
 public:
  // connects to 127.0.0.1:port and completes the TLS handshake, checking
  // the server's certificate (chain to ca_file, name 127.0.0.1). nullptr,
  // with the reason in *error, when any of it fails.
  static std::unique_ptr<TlsClient> connect(int port, const TlsClientOptions& options,
                                            std::string* error = nullptr);
  ~TlsClient();

  bool send(std::string_view bytes);
  // one response; nullopt on timeout, close or a malformed response.
  std::optional<HttpReply> readResponse();
  // true when the server closes the connection within the timeout.
  bool waitClosed();

  // the server certificate's subject common name and serial number.
  std::string peerCommonName() const;
  long peerSerial() const;

 private:
  TlsClient() = default;
  bool fill();  // reads more into buffer_; false on close, error or timeout
  std::optional<std::string> readLine();
  bool readExactly(size_t n, std::string* out);

  int fd_ = -1;
  void* ctx_ = nullptr;  // SSL_CTX*
  void* ssl_ = nullptr;  // SSL*
  std::string buffer_;
};

}  // namespace tandem::tls::testing
