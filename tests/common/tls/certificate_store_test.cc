// The TLS material of a server read from real PEM files made at test time:
// what is refused at start (one clear error naming the file), and what a
// reload does (new material on success, the old kept on failure).
#include "common/tls/certificate_store.h"

#include <gtest/gtest.h>

#include "tests/common/tls/test_pki.h"

namespace tandem::tls {
namespace {

using testing::TestCert;
using testing::TestPki;

TEST(CertificateStoreTest, LoadsACertificateAndItsKey) {
  TestPki pki;
  TestCert cert = pki.issue("server-1", 11, "server");
  absl::StatusOr<CertificateStorePtr> store =
      CertificateStore::create({cert.cert_file, cert.key_file, pki.caFile()});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->generation(), 1u);
  EXPECT_EQ((*store)->current()->subject, "/CN=server-1");
  EXPECT_EQ((*store)->current()->serial, "0B");
  EXPECT_FALSE((*store)->current()->client_ca_pem.empty());
}

TEST(CertificateStoreTest, RefusesAKeyThatIsNotTheCertificates) {
  TestPki pki;
  TestCert one = pki.issue("one", 2, "one");
  TestCert two = pki.issue("two", 3, "two");
  absl::StatusOr<CertificateStorePtr> store = CertificateStore::create({one.cert_file, two.key_file});
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(store.status()));
  EXPECT_NE(store.status().message().find("does not match the certificate"), std::string::npos)
      << store.status();
  EXPECT_NE(store.status().message().find(two.key_file), std::string::npos);
}

TEST(CertificateStoreTest, RefusesMissingHalfAndUnreadableOrWrongFiles) {
  TestPki pki;
  TestCert cert = pki.issue("server", 2, "server");
  EXPECT_TRUE(absl::IsInvalidArgument(CertificateStore::create({cert.cert_file, ""}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(CertificateStore::create({"", cert.key_file}).status()));
  EXPECT_TRUE(absl::IsNotFound(
      CertificateStore::create({pki.dir() + "/absent.pem", cert.key_file}).status()));
  // a key where the certificate belongs
  absl::Status swapped = CertificateStore::create({cert.key_file, cert.key_file}).status();
  EXPECT_NE(swapped.message().find("holds no PEM certificate"), std::string::npos) << swapped;
  // a client CA file without a certificate
  absl::Status bad_ca = CertificateStore::create({cert.cert_file, cert.key_file, cert.key_file}).status();
  EXPECT_NE(bad_ca.message().find("client CA"), std::string::npos) << bad_ca;
}

TEST(CertificateStoreTest, ReloadTakesTheNewFilesAndAFailedOneKeepsTheOld) {
  TestPki pki;
  TestCert cert = pki.issue("server-1", 1, "server");
  CertificateStorePtr store = *CertificateStore::create({cert.cert_file, cert.key_file});
  pki.issue("server-2", 2, "server");
  ASSERT_TRUE(store->reload().ok());
  EXPECT_EQ(store->generation(), 2u);
  EXPECT_EQ(store->current()->subject, "/CN=server-2");

  // a half-written rotation: the new certificate with the old key.
  const std::string old_key = testing::readFile(cert.key_file);
  pki.issue("server-3", 3, "server");
  testing::writeFile(cert.key_file, old_key);
  absl::Status failed = store->reload();
  EXPECT_TRUE(absl::IsInvalidArgument(failed)) << failed;
  EXPECT_EQ(store->generation(), 2u);
  EXPECT_EQ(store->current()->subject, "/CN=server-2");
}

}  // namespace
}  // namespace tandem::tls
