// The protections the server applies before a handler sees a request:
// head and body limits, 100-continue, request and idle timeouts, malformed
// input and the connection limit. Every error body is an OpenAI error.
#include "common/http/http_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

using openai::ApiError;
using openai::errorBody;
using openai::errorFor;

using std::chrono::milliseconds;
using testing::echoHandler;
using testing::getRequest;
using testing::postRequest;
using testing::RawClient;
using testing::RawResponse;
using testing::startServer;
using testing::waitUntil;

// a handler that counts its calls and echoes.
struct CountingEcho {
  std::atomic<int> calls{0};
  HttpHandler handler() {
    return [this](HttpRequest request, ResponseWriterPtr writer) {
      ++calls;
      writer->respond(200, {}, absl::StrCat("body=", request.body.size()));
    };
  }
};

// the response is the server's own error: `status`, JSON, an OpenAI body
// with a message, and the connection closes after it.
void expectServerError(RawClient& client, int status) {
  auto response = client.readResponse();
  ASSERT_TRUE(response.has_value()) << "no response, expected " << status;
  EXPECT_EQ(response->status, status);
  EXPECT_EQ(response->header("Content-Type"), "application/json");
  EXPECT_EQ(response->header("Connection"), "close");
  auto body = nlohmann::json::parse(response->body);
  ApiError expected = errorFor(status, body["error"]["message"].get<std::string>());
  EXPECT_EQ(response->body, errorBody(expected));
  EXPECT_FALSE(expected.message.empty());
  EXPECT_TRUE(client.waitClosed());
}

void expectServes(HttpServer& server) {
  auto client = RawClient::connect(server.port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(postRequest("/next", "ok")));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST(HttpServerLimitsTest, HeadLargerThanTheLimitAnswers431) {
  CountingEcho echo;
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  HttpServerPtr server = startServer(options, echo.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/", "X-Big: " + std::string(2000, 'h') + "\r\n")));
  expectServerError(*client, 431);
  EXPECT_EQ(echo.calls.load(), 0);
  // a head just under the limit is fine.
  auto fits = RawClient::connect(server->port());
  ASSERT_NE(fits, nullptr);
  ASSERT_TRUE(fits->send(getRequest("/", "X-Big: " + std::string(800, 'h') + "\r\n")));
  EXPECT_EQ(fits->readResponse()->status, 200);
}

TEST(HttpServerLimitsTest, DeclaredBodyOverTheLimitAnswers413BeforeTheBodyIsSent) {
  CountingEcho echo;
  HttpServerOptions options;
  options.max_body_bytes = 1 << 20;
  HttpServerPtr server = startServer(options, echo.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  // only the head goes out: the answer must not wait for the body.
  ASSERT_TRUE(client->send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n"));
  expectServerError(*client, 413);
  EXPECT_EQ(echo.calls.load(), 0);
  expectServes(*server);
}

TEST(HttpServerLimitsTest, TenMegabyteBodyAnswers413AndTheNextConnectionIsServed) {
  CountingEcho echo;
  HttpServerOptions options;
  options.max_body_bytes = 4 << 20;
  HttpServerPtr server = startServer(options, echo.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  std::string body(10 << 20, 'x');
  // the server may close before it has read everything; the send result
  // does not matter, the answer does.
  std::thread sender([&] { client->send(postRequest("/big", body)); });
  auto response = client->readResponse();
  sender.join();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(echo.calls.load(), 0);
  expectServes(*server);
}

TEST(HttpServerLimitsTest, ChunkedBodyOverTheLimitAnswers413) {
  CountingEcho echo;
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  HttpServerPtr server = startServer(options, echo.handler());
  ASSERT_NE(server, nullptr);
  std::string chunk(600, 'c');
  std::string chunked = absl::StrCat("258\r\n", chunk, "\r\n");  // 0x258 = 600
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked));
  EXPECT_TRUE(client->staysQuiet(milliseconds(50)));  // 600 bytes are within the limit
  client->send(chunked + "0\r\n\r\n");
  expectServerError(*client, 413);
  EXPECT_EQ(echo.calls.load(), 0);

  auto fits = RawClient::connect(server->port());
  ASSERT_NE(fits, nullptr);
  ASSERT_TRUE(fits->send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked +
                         "0\r\n\r\n"));
  auto response = fits->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "body=600");
}

TEST(HttpServerLimitsTest, ExpectContinueGets100BeforeTheBody) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(
      "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = client->readHead();
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client->send("hello"));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "path=/up body=hello");
}

TEST(HttpServerLimitsTest, ExpectContinueWithAnOversizedBodyGets413Only) {
  HttpServerOptions options;
  options.max_body_bytes = 100;
  HttpServerPtr server = startServer(options, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(
      "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n"));
  expectServerError(*client, 413);
}

TEST(HttpServerLimitsTest, SlowClientGets408WithinTheRequestTimeout) {
  CountingEcho echo;
  HttpServerOptions options;
  options.request_timeout = milliseconds(300);
  HttpServerPtr server = startServer(options, echo.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  std::string request = getRequest("/slow", "X-Padding: " + std::string(100, 'p') + "\r\n");
  auto start = std::chrono::steady_clock::now();
  // a byte at a time, faster than any per-read timeout would catch, never
  // finishing within the request timeout.
  size_t sent = 0;
  while (sent < request.size() && client->staysQuiet(milliseconds(20))) {
    if (!client->send(request.substr(sent++, 1))) break;
  }
  ASSERT_LT(sent, request.size());
  expectServerError(*client, 408);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(250));
  EXPECT_LT(elapsed, milliseconds(1500));
  EXPECT_EQ(echo.calls.load(), 0);
}

TEST(HttpServerLimitsTest, IdleKeepAliveConnectionClosesAfterTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout = milliseconds(200);
  HttpServerPtr server = startServer(options, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/once")));
  ASSERT_TRUE(client->readResponse().has_value());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client->waitClosed());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
  EXPECT_TRUE(client->buffered().empty());  // closed silently, no 408
  EXPECT_TRUE(waitUntil([&] { return server->numConnections() == 0; }));
}

TEST(HttpServerLimitsTest, MalformedRequestAnswers400AndCloses) {
  CountingEcho echo;
  HttpServerPtr server = startServer({}, echo.handler());
  ASSERT_NE(server, nullptr);
  for (std::string bad : {"GARBAGE\r\n\r\n", "GET / HTTP/x.1\r\n\r\n", "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: zz\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"}) {
    auto client = RawClient::connect(server->port());
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->send(bad));
    SCOPED_TRACE(bad);
    expectServerError(*client, 400);
  }
  EXPECT_EQ(echo.calls.load(), 0);
}

TEST(HttpServerLimitsTest, RandomBytesNeverBreakTheServer) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  std::mt19937 random(7);
  for (int round = 0; round < 30; ++round) {
    auto client = RawClient::connect(server->port());
    ASSERT_NE(client, nullptr);
    std::string junk(1 + random() % 3000, '\0');
    for (char& c : junk) c = static_cast<char>(random());
    // half the rounds start like a request, so the parser gets past the method.
    if (round % 2 == 0) junk = "POST /x HTTP/1.1\r\n" + junk;
    client->send(junk + "\r\n\r\n");
    auto response = client->readResponse(std::chrono::seconds(5));
    if (response.has_value()) {
      EXPECT_EQ(response->status, 400) << round;
    }
  }
  expectServes(*server);
}

TEST(HttpServerLimitsTest, ConnectionsBeyondTheLimitAnswer503) {
  HttpServerOptions options;
  options.max_connections = 2;
  HttpServerPtr server = startServer(options, echoHandler());
  ASSERT_NE(server, nullptr);
  auto first = RawClient::connect(server->port());
  auto second = RawClient::connect(server->port());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  for (auto* client : {first.get(), second.get()}) {  // both accepted and served
    ASSERT_TRUE(client->send(getRequest("/")));
    ASSERT_TRUE(client->readResponse().has_value());
  }
  auto third = RawClient::connect(server->port());
  ASSERT_NE(third, nullptr);
  expectServerError(*third, 503);
  third.reset();

  first.reset();
  ASSERT_TRUE(waitUntil([&] { return server->numConnections() == 1; }));
  expectServes(*server);
}

}  // namespace
}  // namespace tandem::http
