// The HTTP/1.1 server's request/response basics over real sockets:
// methods, keep-alive, pipelining, Connection: close, HTTP/1.0, answers
// from other threads, and the 500 for a dropped writer.
#include "common/http/http_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

using testing::echoHandler;
using testing::getRequest;
using testing::postRequest;
using testing::RawClient;
using testing::RawResponse;
using testing::startServer;
using testing::waitUntil;
using testing::WriterInbox;

TEST(HttpServerTest, AnswersGetWithTheRequestParsed) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/v1/models?limit=2&x=1", "X-Custom: Yes\r\n")));

  auto item = inbox.take();
  ASSERT_TRUE(item.has_value());
  const HttpRequest& request = item->request;
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/v1/models?limit=2&x=1");
  EXPECT_EQ(request.path, "/v1/models");
  EXPECT_EQ(request.header("x-custom"), "Yes");
  EXPECT_EQ(request.header("HOST"), "localhost");
  EXPECT_EQ(request.header("absent"), "");
  EXPECT_EQ(request.body, "");
  EXPECT_EQ(request.remote_address.rfind("127.0.0.1:", 0), 0u) << request.remote_address;
  item->writer->respond(200, {{"Content-Type", "application/json"}}, "{\"ok\":true}");

  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->version, "HTTP/1.1");
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "{\"ok\":true}");
  EXPECT_EQ(response->header("Content-Length"), "11");
  EXPECT_EQ(response->header("Content-Type"), "application/json");
  EXPECT_EQ(response->header("Server"), "tandem");
  EXPECT_TRUE(response->hasHeader("Date"));
  EXPECT_FALSE(response->hasHeader("Transfer-Encoding"));
}

TEST(HttpServerTest, PassesPostBodyToTheHandler) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  std::string body(100000, 'b');
  ASSERT_TRUE(client->send(postRequest("/v1/completions", body, "Content-Type: application/json\r\n")));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "path=/v1/completions body=" + body);
}

TEST(HttpServerTest, DecodesChunkedRequestBody) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "path=/c body=hello world");
}

TEST(HttpServerTest, KeepsTheConnectionAliveAcrossRequests) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 5; ++i) {
    std::string path = "/r" + std::to_string(i);
    ASSERT_TRUE(client->send(i % 2 == 0 ? getRequest(path) : postRequest(path, "p")));
    auto response = client->readResponse();
    ASSERT_TRUE(response.has_value()) << i;
    EXPECT_EQ(response->body, "path=" + path + " body=" + (i % 2 == 0 ? "" : "p"));
    EXPECT_FALSE(response->hasHeader("Connection"));
  }
  EXPECT_EQ(server->numConnections(), 1);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrderOneAtATime) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/a") + postRequest("/b", "bee") + getRequest("/c")));

  // the second request reaches the handler only once the first is answered.
  auto first = inbox.take();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->request.path, "/a");
  EXPECT_FALSE(inbox.take(std::chrono::milliseconds(50)).has_value());
  std::thread answer([writer = first->writer] { writer->respond(200, {}, "A"); });
  answer.join();
  auto second = inbox.take();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->request.path, "/b");
  EXPECT_EQ(second->request.body, "bee");
  second->writer->respond(200, {}, "B");
  auto third = inbox.take();
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->request.path, "/c");
  third->writer->respond(201, {}, "C");

  for (const char* expected : {"A", "B", "C"}) {
    auto response = client->readResponse();
    ASSERT_TRUE(response.has_value()) << expected;
    EXPECT_EQ(response->body, expected);
  }
}

TEST(HttpServerTest, ClosesAfterConnectionClose) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/bye", "Connection: close\r\n")));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("Connection"), "close");
  EXPECT_TRUE(client->waitClosed());
  EXPECT_TRUE(waitUntil([&] { return server->numConnections() == 0; }));
}

TEST(HttpServerTest, ClosesHttp10ConnectionWithoutKeepAlive) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send("GET /old HTTP/1.0\r\n\r\n"));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "path=/old body=");
  EXPECT_EQ(response->header("Connection"), "close");
  EXPECT_TRUE(client->waitClosed());
}

TEST(HttpServerTest, KeepsHttp10ConnectionThatAsksForKeepAlive) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client->send("GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto response = client->readResponse();
    ASSERT_TRUE(response.has_value()) << i;
    EXPECT_EQ(response->header("Connection"), "keep-alive");
  }
}

TEST(HttpServerTest, AnswersLaterFromAnotherThread) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/later")));
  auto item = inbox.take();
  ASSERT_TRUE(item.has_value());
  EXPECT_TRUE(client->staysQuiet(std::chrono::milliseconds(50)));
  EXPECT_FALSE(item->writer->closed());
  std::thread([writer = item->writer] { writer->respond(202, {{"X-From", "worker"}}, "done"); }).join();
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 202);
  EXPECT_EQ(response->header("X-From"), "worker");
  EXPECT_EQ(response->body, "done");
}

TEST(HttpServerTest, DroppedWriterAnswers500WithAnOpenAiError) {
  HttpServerPtr server = startServer({}, [](HttpRequest, ResponseWriterPtr) {});
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/nobody")));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->header("Content-Type"), "application/json");
  auto body = nlohmann::json::parse(response->body);
  EXPECT_EQ(body["error"]["type"], "server_error");
  EXPECT_FALSE(body["error"]["message"].get<std::string>().empty());
  // the connection stays usable.
  ASSERT_TRUE(client->send(getRequest("/again")));
  EXPECT_EQ(client->readResponse()->status, 500);
}

TEST(HttpServerTest, ThrowingHandlerAnswers500) {
  HttpServerPtr server = startServer({}, [](HttpRequest, ResponseWriterPtr) { throw std::runtime_error("boom"); });
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/throw")));
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
}

TEST(HttpServerTest, IgnoresASecondAnswer) {
  HttpServerPtr server = startServer({}, [](HttpRequest request, ResponseWriterPtr writer) {
    writer->respond(200, {}, "first");
    writer->respond(500, {}, "second");
    writer->startStream(200, {});
    writer->write("stray");
    writer->finish();
  });
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/x") + getRequest("/y")));
  for (int i = 0; i < 2; ++i) {
    auto response = client->readResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "first");
  }
  EXPECT_TRUE(client->staysQuiet(std::chrono::milliseconds(50)));
}

TEST(HttpServerTest, AnswersHeadWithLengthButNoBody) {
  HttpServerPtr server = startServer({}, [](HttpRequest, ResponseWriterPtr writer) {
    writer->respond(200, {}, "twelve bytes");
  });
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + getRequest("/")));
  auto head = client->readResponse(std::chrono::seconds(5), /*no_body=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->header("Content-Length"), "12");
  auto get = client->readResponse();
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->body, "twelve bytes");
}

TEST(HttpServerTest, ServesManyConcurrentConnections) {
  constexpr int kClients = 200;
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(RawClient::connect(server->port()));
    ASSERT_NE(clients.back(), nullptr) << i;
  }
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(clients[i]->send(postRequest("/c", std::to_string(i))));
  }
  for (int i = 0; i < kClients; ++i) {
    auto response = clients[i]->readResponse();
    ASSERT_TRUE(response.has_value()) << i;
    EXPECT_EQ(response->body, "path=/c body=" + std::to_string(i));
  }
  EXPECT_EQ(server->numConnections(), kClients);
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return server->numConnections() == 0; }));
}

// A client that reads its whole response and closes at once can close while
// the server's last write is still completing; the server must notice that
// close then, not at idle_timeout (a re-read after EOF never completed:
// Asio's edge-triggered reactor reports EOF once).
TEST(HttpServerTest, NoticesEveryClientThatClosesRightAfterItsResponse) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 150;
  HttpServerOptions options;
  options.idle_timeout = std::chrono::minutes(10);  // a missed close would linger
  HttpServerPtr server = startServer(options, echoHandler());
  ASSERT_NE(server, nullptr);
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        auto client = RawClient::connect(server->port());
        if (client == nullptr || !client->send(postRequest("/c", std::to_string(t)))) continue;
        auto response = client->readResponse(std::chrono::seconds(60));
        if (response.has_value() && response->body == "path=/c body=" + std::to_string(t)) ++answered;
      }  // each client closes as soon as it has read its response
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(answered.load(), kThreads * kRounds);
  EXPECT_TRUE(waitUntil([&] { return server->numConnections() == 0; }, std::chrono::seconds(30)))
      << server->numConnections() << " closed connections were not noticed";
}

TEST(HttpServerTest, RejectsBadOptionsAndBusyPorts) {
  HttpHandler handler = echoHandler();
  HttpServerOptions no_threads;
  no_threads.num_threads = 0;
  EXPECT_EQ(HttpServer::start(no_threads, handler).status().code(), absl::StatusCode::kInvalidArgument);
  HttpServerOptions bad_port;
  bad_port.port = 70000;
  EXPECT_EQ(HttpServer::start(bad_port, handler).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::start({}, nullptr).status().code(), absl::StatusCode::kInvalidArgument);

  HttpServerPtr server = startServer({}, handler);
  ASSERT_NE(server, nullptr);
  HttpServerOptions same_port;
  same_port.port = server->port();
  EXPECT_EQ(HttpServer::start(same_port, handler).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tandem::http
