// The OpenSSL server context each new HTTPS connection handshakes with,
// built from a tls::CertificateStore and rebuilt when the store reloads: a
// connection keeps the context it started with (shared), new ones take the
// newest.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include <boost/asio/ssl/context.hpp>

#include "absl/status/statusor.h"
#include "common/tls/certificate_store.h"

namespace tandem::http {

using SslContextPtr = std::shared_ptr<boost::asio::ssl::context>;

// a TLS server context (TLS 1.2 or newer) presenting `material`'s
// certificate and, when it names a client CA, requiring and verifying
// client certificates. InvalidArgument when OpenSSL refuses the material.
absl::StatusOr<SslContextPtr> makeServerSslContext(const tls::TlsMaterial& material);

class SslContextSource {
 public:
  // builds the first context (makeServerSslContext's errors).
  static absl::StatusOr<std::unique_ptr<SslContextSource>> create(tls::CertificateStorePtr store);

  // the context for a new connection: rebuilt once after each reload of the
  // store. Thread-safe.
  SslContextPtr current();

 private:
  SslContextSource(tls::CertificateStorePtr store, SslContextPtr context, uint64_t generation)
      : store_(std::move(store)), context_(std::move(context)), generation_(generation) {}

  const tls::CertificateStorePtr store_;
  std::mutex mu_;
  SslContextPtr context_;  // guarded by mu_
  uint64_t generation_;    // the store's, when context_ was built; guarded by mu_
};

}  // namespace tandem::http
