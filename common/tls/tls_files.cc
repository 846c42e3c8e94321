#include "common/tls/tls_files.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"

namespace tandem::tls {
namespace {

// OpenSSL frees its global state from an atexit handler unless its first
// initialization says not to. That handler races with threads still
// running at exit (gRPC's own): it deletes the thread-local key whose
// destructor frees a thread's error state, so a thread that ends after it
// leaves that state behind (openssl/openssl#6214; LeakSanitizer reported
// it, 904 bytes, after a TLS test). The kernel takes the memory back at
// exit anyway, so tandem initializes OpenSSL without the handler, during
// static initialization: before main, before any other use decides.
[[maybe_unused]] const bool kOpenSslInitializedWithoutAtexit =
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr memoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// every certificate in `pem`, in order.
std::vector<X509Ptr> readCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = memoryBio(pem);
  while (bio != nullptr) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the input reads as an error
  return certs;
}

std::string subjectOf(X509* cert) {
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  return buf;
}

std::string serialOf(X509* cert) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(cert), nullptr);
  if (bn == nullptr) return "";
  char* hex = BN_bn2hex(bn);
  std::string serial = hex != nullptr ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return serial;
}

}  // namespace

absl::StatusOr<TlsMaterial> loadTlsMaterial(const TlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate file and its key file (--tls-cert and --tls-key)");
  }
  TlsMaterial material;
  absl::StatusOr<std::string> cert = readNamedFile(files.cert_file, "TLS certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = readNamedFile(files.key_file, "TLS key");
  if (!key.ok()) return key.status();
  material.cert_pem = *std::move(cert);
  material.key_pem = *std::move(key);

  std::vector<X509Ptr> chain = readCertificates(material.cert_pem);
  if (chain.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the TLS certificate file '", files.cert_file, "' holds no PEM certificate"));
  }
  BioPtr key_bio = memoryBio(material.key_pem);
  KeyPtr private_key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                             : nullptr);
  ERR_clear_error();
  if (private_key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the TLS key file '", files.key_file, "' holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(chain.front().get(), private_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("the TLS key in '", files.key_file,
                                                   "' does not match the certificate in '",
                                                   files.cert_file, "'"));
  }
  material.subject = subjectOf(chain.front().get());
  material.serial = serialOf(chain.front().get());

  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = readNamedFile(files.client_ca_file, "TLS client CA");
    if (!ca.ok()) return ca.status();
    if (readCertificates(*ca).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the TLS client CA file '", files.client_ca_file, "' holds no PEM certificate"));
    }
    material.client_ca_pem = *std::move(ca);
  }
  return material;
}

}  // namespace tandem::tls
