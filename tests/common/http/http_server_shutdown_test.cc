// shutdown(grace): accepting stops at once, responses in progress may
// finish within the grace period, then everything closes; writers that
// outlive the server stay harmless.
#include "common/http/http_server.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

using std::chrono::milliseconds;
using testing::echoHandler;
using testing::getRequest;
using testing::RawClient;
using testing::startServer;
using testing::waitUntil;
using testing::WriterInbox;

using Clock = std::chrono::steady_clock;

// a server with one stream in flight: head and a first chunk received.
class HttpServerShutdownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = startServer({}, inbox_.handler());
    ASSERT_NE(server_, nullptr);
    port_ = server_->port();
    client_ = RawClient::connect(port_);
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->send(getRequest("/stream")));
    auto item = inbox_.take();
    ASSERT_TRUE(item.has_value());
    writer_ = item->writer;
    writer_->onClose([this] { ++closes_; });
    writer_->startStream(200, {});
    writer_->write("first");
    ASSERT_TRUE(client_->readHead().has_value());
    ASSERT_EQ(client_->readChunk(), "first");
  }

  // true once a new connection is refused.
  bool refusesConnections() {
    return waitUntil([&] { return RawClient::connect(port_) == nullptr; });
  }

  WriterInbox inbox_;
  HttpServerPtr server_;
  int port_ = 0;
  std::unique_ptr<RawClient> client_;
  ResponseWriterPtr writer_;
  std::atomic<int> closes_{0};
};

TEST_F(HttpServerShutdownTest, StreamInFlightFinishesWithinGrace) {
  auto idle = RawClient::connect(port_);  // an idle connection closes at once
  ASSERT_NE(idle, nullptr);
  ASSERT_TRUE(waitUntil([&] { return server_->numConnections() == 2; }));
  auto start = Clock::now();
  std::future<void> stopped = std::async(std::launch::async, [&] { server_->shutdown(std::chrono::seconds(20)); });
  EXPECT_TRUE(refusesConnections());
  EXPECT_TRUE(idle->waitClosed());

  for (std::string chunk : {"second", "third"}) writer_->write(chunk);
  writer_->finish();
  EXPECT_EQ(client_->readChunk(), "second");
  EXPECT_EQ(client_->readChunk(), "third");
  EXPECT_EQ(client_->readChunk(), "");
  EXPECT_TRUE(client_->waitClosed());
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));  // not the whole grace
  EXPECT_EQ(closes_.load(), 0);
}

TEST_F(HttpServerShutdownTest, StreamStillRunningAfterGraceIsClosed) {
  auto start = Clock::now();
  server_->shutdown(milliseconds(200));
  auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(190));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(closes_.load(), 1);
  EXPECT_TRUE(writer_->closed());
  EXPECT_EQ(server_->numConnections(), 0);
  // the body never got its last chunk.
  EXPECT_FALSE(client_->readChunk().has_value());
  EXPECT_TRUE(client_->waitClosed());
  // calls after shutdown, and after the server is gone, do nothing.
  writer_->write("late");
  server_.reset();
  writer_->write("later");
  writer_->finish();
  EXPECT_EQ(writer_->pendingBytes(), 0u);
}

TEST_F(HttpServerShutdownTest, IsIdempotentAndStopsAccepting) {
  server_->shutdown(milliseconds(0));
  server_->shutdown(milliseconds(0));
  EXPECT_EQ(RawClient::connect(port_), nullptr);
  EXPECT_EQ(closes_.load(), 1);
  EXPECT_TRUE(client_->waitClosed());
}

TEST(HttpServerLifetimeTest, WriterOutlivingTheServerIsHarmless) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/kept")));
  auto item = inbox.take();
  ASSERT_TRUE(item.has_value());
  server.reset();  // destructor: shutdown(0)
  EXPECT_TRUE(item->writer->closed());
  item->writer->respond(200, {}, "too late");
  bool ran = false;
  item->writer->onClose([&] { ran = true; });
  EXPECT_TRUE(ran);
  item->writer.reset();  // would answer 500 if the connection were open
  EXPECT_TRUE(client->waitClosed());
}

TEST(HttpServerLifetimeTest, ForeignThreadsWritingDuringShutdownAreSafe) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> clients;
  std::vector<std::thread> producers;
  std::atomic<bool> stop{false};
  for (int i = 0; i < 4; ++i) {
    clients.push_back(RawClient::connect(server->port()));
    ASSERT_NE(clients.back(), nullptr);
    ASSERT_TRUE(clients.back()->send(getRequest("/s")));
    auto item = inbox.take();
    ASSERT_TRUE(item.has_value());
    producers.emplace_back([writer = item->writer, &stop] {
      writer->startStream(200, {});
      while (!stop.load()) writer->write("tick");
      writer->finish();
    });
  }
  server->shutdown(milliseconds(20));
  server.reset();
  stop = true;
  for (std::thread& producer : producers) producer.join();
  for (auto& client : clients) EXPECT_TRUE(client->waitClosed());
}

TEST(HttpServerLifetimeTest, ShutdownClosesIdleKeepAliveConnectionsAtOnce) {
  HttpServerPtr server = startServer({}, echoHandler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(getRequest("/")));
  ASSERT_TRUE(client->readResponse().has_value());
  auto start = Clock::now();
  server->shutdown(std::chrono::seconds(20));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(client->waitClosed(milliseconds(100)));
}

}  // namespace
}  // namespace tandem::http
