#include "tests/common/tls/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tandem::tls::testing {
namespace {

EVP_PKEY* newKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) throw std::runtime_error("cannot make an EC key");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("bad certificate extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// a certificate for `key` named `name`; self-signed when issuer is null.
X509* makeCert(EVP_PKEY* key, const std::string& name, long serial, X509* issuer,
               EVP_PKEY* issuer_key) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : subject);
  X509* signer = issuer != nullptr ? issuer : cert;
  if (issuer == nullptr) {
    addExtension(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert, signer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    addExtension(cert, signer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  X509_sign(cert, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return cert;
}

std::string certPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, n);
  BIO_free(bio);
  return pem;
}

std::string keyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, n);
  BIO_free(bio);
  return pem;
}

}  // namespace

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TestPki::TestPki(const std::string& ca_name) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tandem-pki-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  EVP_PKEY* key = newKey();
  X509* cert = makeCert(key, ca_name, 1, nullptr, nullptr);
  ca_key_ = key;
  ca_cert_ = cert;
  ca_file_ = dir_ + "/ca.pem";
  writeFile(ca_file_, certPem(cert));
}

TestPki::~TestPki() {
  X509_free(static_cast<X509*>(ca_cert_));
  EVP_PKEY_free(static_cast<EVP_PKEY*>(ca_key_));
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

TestCert TestPki::issue(const std::string& common_name, long serial, const std::string& file_stem) {
  EVP_PKEY* key = newKey();
  X509* cert = makeCert(key, common_name, serial, static_cast<X509*>(ca_cert_),
                        static_cast<EVP_PKEY*>(ca_key_));
  TestCert out{dir_ + "/" + file_stem + ".pem", dir_ + "/" + file_stem + ".key", common_name, serial};
  writeFile(out.cert_file, certPem(cert));
  writeFile(out.key_file, keyPem(key));
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace tandem::tls::testing
