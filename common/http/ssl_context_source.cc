#include "common/http/ssl_context_source.h"

#include <openssl/ssl.h>

#include <cstdio>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>

#include "absl/strings/str_cat.h"

namespace tandem::http {
namespace {

namespace ssl = boost::asio::ssl;

// a session resumed with a client certificate needs an id context.
constexpr unsigned char kSessionIdContext[] = "tandem-https";

}  // namespace

absl::StatusOr<SslContextPtr> makeServerSslContext(const tls::TlsMaterial& material) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  if (!ec) context->use_certificate_chain(boost::asio::buffer(material.cert_pem), ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS certificate refused: ", ec.message()));
  context->use_private_key(boost::asio::buffer(material.key_pem), ssl::context::pem, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS key refused: ", ec.message()));
  if (!material.client_ca_pem.empty()) {
    context->add_certificate_authority(boost::asio::buffer(material.client_ca_pem), ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS client CA refused: ", ec.message()));
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    SSL_CTX_set_session_id_context(context->native_handle(), kSessionIdContext,
                                   sizeof(kSessionIdContext) - 1);
  }
  return context;
}

absl::StatusOr<std::unique_ptr<SslContextSource>> SslContextSource::create(
    tls::CertificateStorePtr store) {
  uint64_t generation = 0;
  std::shared_ptr<const tls::TlsMaterial> material = store->current(&generation);
  absl::StatusOr<SslContextPtr> context = makeServerSslContext(*material);
  if (!context.ok()) return context.status();
  return std::unique_ptr<SslContextSource>(
      new SslContextSource(std::move(store), *std::move(context), generation));
}

SslContextPtr SslContextSource::current() {
  std::lock_guard lock(mu_);
  if (store_->generation() == generation_) return context_;
  uint64_t generation = 0;
  std::shared_ptr<const tls::TlsMaterial> material = store_->current(&generation);
  absl::StatusOr<SslContextPtr> context = makeServerSslContext(*material);
  if (context.ok()) {
    context_ = *std::move(context);
  } else {
    // the store checked the files, so OpenSSL refusing them is unexpected:
    // keep serving with the previous certificate.
    std::fprintf(stderr, "https: keeping the previous certificate: %s\n",
                 context.status().ToString().c_str());
  }
  generation_ = generation;
  return context_;
}

}  // namespace tandem::http
