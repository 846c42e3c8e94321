// A throwaway public key infrastructure made at test time with OpenSSL's C
// API (no private key is committed): a CA, and certificates it signs for
// 127.0.0.1 / localhost, written as PEM files into a temporary directory
// that goes with the object.
#pragma once

#include <string>

namespace tandem::tls::testing {

struct TestCert {
  std::string cert_file;
  std::string key_file;
  std::string common_name;
  long serial = 0;
};

class TestPki {
 public:
  // a fresh CA named `ca_name` in a fresh temporary directory.
  explicit TestPki(const std::string& ca_name = "tandem test CA");
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& caFile() const { return ca_file_; }

  // a certificate for `common_name` (subject alternative names localhost
  // and 127.0.0.1, usable by servers and clients) with `serial`, signed by
  // this CA, written to <dir>/<file_stem>.pem and .key (replaced if there).
  TestCert issue(const std::string& common_name, long serial, const std::string& file_stem);

 private:
  std::string dir_;
  std::string ca_file_;
  void* ca_key_ = nullptr;   // EVP_PKEY*
  void* ca_cert_ = nullptr;  // X509*
};

// writes `text` to `path` (replacing it).
void writeFile(const std::string& path, const std::string& text);
std::string readFile(const std::string& path);

}  // namespace tandem::tls::testing
