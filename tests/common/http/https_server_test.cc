// The HTTP server over TLS, on loopback with certificates made at test time:
// requests and chunked streams go through the TLS stream, plain HTTP to the
// port is a 400, a client that never handshakes is cut off, back-pressure
// (pendingBytes) still shows a client that stops reading, client
// certificates are required when a client CA is given, and a reload of the
// certificate store changes what new connections see and nothing else.
#include <gtest/gtest.h>

#include <string>

#include "common/http/http_server.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"
#include "tests/common/tls/test_pki.h"
#include "tests/common/tls/tls_client.h"

namespace tandem::http {
namespace {

using testing::RawClient;
using tls::testing::HttpReply;
using tls::testing::TestCert;
using tls::testing::TestPki;
using tls::testing::TlsClient;
using tls::testing::TlsClientOptions;

class HttpsServerTest : public ::testing::Test {
 protected:
  void start(HttpHandler handler, HttpServerOptions options = {}, bool client_ca = false) {
    cert_ = pki_.issue("server-1", 1, "server");
    absl::StatusOr<tls::CertificateStorePtr> store = tls::CertificateStore::create(
        {cert_.cert_file, cert_.key_file, client_ca ? pki_.caFile() : ""});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
    options.tls = store_;
    server_ = testing::startServer(options, std::move(handler));
    ASSERT_NE(server_, nullptr);
  }

  std::unique_ptr<TlsClient> connect(TlsClientOptions options = {}) {
    options.ca_file = pki_.caFile();
    std::string error;
    auto client = TlsClient::connect(server_->port(), options, &error);
    EXPECT_NE(client, nullptr) << error;
    return client;
  }

  std::optional<HttpReply> get(TlsClient& client, const std::string& target) {
    if (!client.send(testing::getRequest(target))) return std::nullopt;
    return client.readResponse();
  }

  TestPki pki_;
  TestCert cert_;
  tls::CertificateStorePtr store_;
  HttpServerPtr server_;
};

TEST_F(HttpsServerTest, ServesRequestsOverTlsOnAKeptAliveConnection) {
  start(testing::echoHandler());
  auto client = connect();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->peerCommonName(), "server-1");
  for (const char* path : {"/a", "/b"}) {
    std::optional<HttpReply> reply = get(*client, path);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->body, std::string("path=") + path + " body=");
  }
}

TEST_F(HttpsServerTest, PlainHttpToTheTlsPortIsRefusedWithA400) {
  start(testing::echoHandler());
  auto client = RawClient::connect(server_->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(testing::getRequest("/a")));
  std::optional<testing::RawResponse> response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_NE(response->body.find("HTTPS"), std::string::npos) << response->body;
  EXPECT_TRUE(client->waitClosed());
}

TEST_F(HttpsServerTest, StreamsChunksOverTls) {
  testing::WriterInbox inbox;
  start(inbox.handler());
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(testing::getRequest("/events")));
  std::optional<testing::WriterInbox::Item> item = inbox.take();
  ASSERT_TRUE(item.has_value());
  item->writer->startStream(200, {{"Content-Type", "text/event-stream"}});
  item->writer->write("data: one\n\n");
  item->writer->write("data: two\n\n");
  item->writer->finish();
  std::optional<HttpReply> reply = client->readResponse();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(reply->body, "data: one\n\ndata: two\n\n");
}

TEST_F(HttpsServerTest, AClientThatStopsReadingShowsInPendingBytes) {
  testing::WriterInbox inbox;
  start(inbox.handler());
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(testing::getRequest("/events")));
  std::optional<testing::WriterInbox::Item> item = inbox.take();
  ASSERT_TRUE(item.has_value());
  ResponseWriterPtr writer = item->writer;
  writer->startStream(200, {});
  // the client reads nothing: once the socket buffers are full, what is
  // written stays queued, as over plain TCP.
  const std::string chunk(64 * 1024, 'x');
  ASSERT_TRUE(testing::waitUntil([&] {
    if (writer->pendingBytes() < (8u << 20)) writer->write(chunk);
    return writer->pendingBytes() >= (8u << 20);
  }));
  writer->abort();
  EXPECT_TRUE(testing::waitUntil([&] { return writer->closed(); }));
}

TEST_F(HttpsServerTest, OversizedBodyIsA413OverTls) {
  HttpServerOptions options;
  options.max_body_bytes = 16;
  start(testing::echoHandler(), options);
  auto client = connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(testing::postRequest("/a", std::string(100, 'b'))));
  std::optional<HttpReply> reply = client->readResponse();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 413);
}

TEST_F(HttpsServerTest, AClientThatNeverHandshakesIsCutOff) {
  HttpServerOptions options;
  options.request_timeout = std::chrono::milliseconds(200);
  start(testing::echoHandler(), options);
  auto client = RawClient::connect(server_->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send("\x16\x03\x01"));  // the start of a TLS record, then nothing
  EXPECT_TRUE(client->waitClosed(std::chrono::seconds(20)));
}

TEST_F(HttpsServerTest, AClientCaRequiresAClientCertificate) {
  start(testing::echoHandler(), {}, /*client_ca=*/true);
  // without a certificate: the handshake fails (TLS 1.2) or the server
  // closes before answering (TLS 1.3 checks it after the client's finish).
  std::string error;
  auto anonymous = TlsClient::connect(server_->port(), {.ca_file = pki_.caFile()}, &error);
  if (anonymous != nullptr) {
    EXPECT_FALSE(get(*anonymous, "/a").has_value());
  }
  // a certificate of another CA: refused the same way.
  TestPki stranger_pki("stranger CA");
  TestCert stranger = stranger_pki.issue("stranger", 5, "stranger");
  auto foreign = TlsClient::connect(
      server_->port(),
      {.ca_file = pki_.caFile(), .cert_file = stranger.cert_file, .key_file = stranger.key_file},
      &error);
  if (foreign != nullptr) {
    EXPECT_FALSE(get(*foreign, "/a").has_value());
  }
  // the CA's own client: served.
  TestCert member = pki_.issue("client", 6, "client");
  auto client = connect({.cert_file = member.cert_file, .key_file = member.key_file});
  ASSERT_NE(client, nullptr);
  std::optional<HttpReply> reply = get(*client, "/a");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
}

TEST_F(HttpsServerTest, AReloadChangesTheCertificateOfNewConnectionsOnly) {
  start(testing::echoHandler());
  auto before = connect();
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(before->peerSerial(), 1);

  pki_.issue("server-2", 2, "server");  // same files, new certificate and key
  ASSERT_TRUE(store_->reload().ok());
  auto after = connect();
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->peerSerial(), 2);
  EXPECT_EQ(after->peerCommonName(), "server-2");
  std::optional<HttpReply> reply = get(*after, "/new");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  // the connection opened before goes on with its certificate.
  reply = get(*before, "/old");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(before->peerSerial(), 1);
}

TEST_F(HttpsServerTest, AFailedReloadKeepsServingTheCertificateInUse) {
  start(testing::echoHandler());
  tls::testing::writeFile(cert_.key_file, "not a key\n");
  EXPECT_FALSE(store_->reload().ok());
  auto client = connect();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->peerSerial(), 1);
  std::optional<HttpReply> reply = get(*client, "/a");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
}

}  // namespace
}  // namespace tandem::http
