// The PEM files a TLS server is configured with, and their contents once
// read and checked: a certificate chain, its private key, and optionally
// the CA certificate(s) client certificates must chain to (then a client
// without a valid certificate is refused).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tandem::tls {

struct TlsFiles {
  std::string cert_file;       // PEM: the server's certificate, then its chain
  std::string key_file;        // PEM: the certificate's private key
  std::string client_ca_file;  // PEM: CA(s) for client certificates; "" = none asked

  // TLS is on: a certificate and a key are given.
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;  // "" = no client certificates
  // the leaf certificate's subject and serial (hex), for log lines.
  std::string subject;
  std::string serial;
};

// reads `files` and checks what they hold with OpenSSL: at least one
// certificate in the certificate file, a private key that matches its
// first (leaf) certificate, at least one certificate in the client CA file
// when given. InvalidArgument when only one of cert_file and key_file is
// given or a file holds the wrong thing; NotFound when a file cannot be
// read. Every message names the file at fault.
absl::StatusOr<TlsMaterial> loadTlsMaterial(const TlsFiles& files);

}  // namespace tandem::tls
