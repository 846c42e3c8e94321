// Streaming responses (chunked transfer encoding, as server-sent events
// use it): prompt flushing, order, pending bytes, and a client that goes
// away mid-stream.
#include "common/http/http_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

using std::chrono::milliseconds;
using testing::getRequest;
using testing::RawClient;
using testing::startServer;
using testing::waitUntil;
using testing::WriterInbox;

const std::vector<HttpHeader> kEventStream = {{"Content-Type", "text/event-stream"},
                                               {"Cache-Control", "no-cache"}};

class HttpServerStreamTest : public ::testing::Test {
 protected:
  // starts the server, sends GET /stream and takes its writer.
  void SetUp() override {
    server_ = startServer({}, inbox_.handler());
    ASSERT_NE(server_, nullptr);
    client_ = RawClient::connect(server_->port());
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->send(getRequest("/stream")));
    auto item = inbox_.take();
    ASSERT_TRUE(item.has_value());
    writer_ = item->writer;
  }

  WriterInbox inbox_;
  HttpServerPtr server_;
  std::unique_ptr<RawClient> client_;
  ResponseWriterPtr writer_;
};

TEST_F(HttpServerStreamTest, SendsEachWriteAtOnce) {
  writer_->startStream(200, kEventStream);
  auto head = client_->readHead();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(head->header("Content-Type"), "text/event-stream");
  EXPECT_FALSE(head->hasHeader("Content-Length"));

  // each write reaches the client before the next one is made.
  for (std::string event : {"data: one\n\n", "data: two\n\n"}) {
    writer_->write(event);
    EXPECT_EQ(client_->readChunk(), event);
  }
  writer_->write("");  // an empty write must not end the body
  writer_->finish();
  EXPECT_EQ(client_->readChunk(), "");
  // the connection is kept for the next request.
  ASSERT_TRUE(client_->send(getRequest("/next")));
  auto next = inbox_.take();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->request.path, "/next");
}

TEST_F(HttpServerStreamTest, DeliversAThousandChunksFromAnotherThreadInOrder) {
  std::string expected;
  for (int i = 0; i < 1000; ++i) absl::StrAppend(&expected, "data: ", i, "\n\n");
  std::thread producer([writer = writer_] {
    writer->startStream(200, kEventStream);
    for (int i = 0; i < 1000; ++i) writer->write(absl::StrCat("data: ", i, "\n\n"));
    writer->finish();
  });
  auto response = client_->readResponse();
  producer.join();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, expected);
  EXPECT_TRUE(waitUntil([&] { return writer_->pendingBytes() == 0; }));
}

TEST_F(HttpServerStreamTest, PendingBytesCountsQueuedWrites) {
  writer_->startStream(200, {});
  // more than the kernel's socket buffers can hold (at most 4 MiB sent +
  // 32 MiB received here) while the client reads nothing.
  constexpr size_t kWrites = 48;
  std::string block(1 << 20, 'p');
  for (size_t i = 0; i < kWrites; ++i) writer_->write(block);
  EXPECT_LE(writer_->pendingBytes(), kWrites << 20);
  EXPECT_GT(writer_->pendingBytes(), 8u << 20);
  writer_->finish();
  auto response = client_->readResponse(std::chrono::seconds(20));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body.size(), kWrites << 20);
  EXPECT_TRUE(waitUntil([&] { return writer_->pendingBytes() == 0; }));
}

TEST_F(HttpServerStreamTest, ClientDisconnectMidStreamRunsOnCloseAtOnce) {
  std::atomic<int> closes{0};
  std::atomic<int64_t> closed_at_ns{0};
  writer_->onClose([&] {
    closed_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    ++closes;
  });
  writer_->startStream(200, kEventStream);
  writer_->write("data: first\n\n");
  ASSERT_TRUE(client_->readHead().has_value());
  ASSERT_EQ(client_->readChunk(), "data: first\n\n");
  EXPECT_FALSE(writer_->closed());

  auto disconnected = std::chrono::steady_clock::now();
  client_->close();  // no write is pending: only the outstanding read can notice
  ASSERT_TRUE(waitUntil([&] { return closes.load() == 1; }));
  auto noticed = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(closed_at_ns.load()));
  EXPECT_LT(noticed - disconnected, milliseconds(100));
  EXPECT_TRUE(writer_->closed());

  // later calls do nothing, and a late onClose runs at once.
  writer_->write("data: lost\n\n");
  EXPECT_EQ(writer_->pendingBytes(), 0u);
  writer_->finish();
  bool late = false;
  writer_->onClose([&] { late = true; });
  EXPECT_TRUE(late);
  EXPECT_EQ(closes.load(), 1);
  EXPECT_TRUE(waitUntil([&] { return server_->numConnections() == 0; }));
}

TEST_F(HttpServerStreamTest, OnCloseDoesNotRunAfterACompletedResponse) {
  std::atomic<int> closes{0};
  writer_->onClose([&] { ++closes; });
  writer_->respond(200, {}, "whole");
  ASSERT_EQ(client_->readResponse()->body, "whole");
  client_->close();
  ASSERT_TRUE(waitUntil([&] { return server_->numConnections() == 0; }));
  EXPECT_EQ(closes.load(), 0);
}

TEST_F(HttpServerStreamTest, DroppedWriterMidStreamCutsTheBodyShort) {
  writer_->startStream(200, {});
  writer_->write("partial");
  writer_.reset();
  ASSERT_TRUE(client_->readHead().has_value());
  EXPECT_EQ(client_->readChunk(), "partial");
  EXPECT_FALSE(client_->readChunk().has_value());  // no last chunk: the client sees the failure
  EXPECT_TRUE(client_->waitClosed());
}

TEST(HttpServerStreamHttp10Test, StreamEndsWithTheConnection) {
  WriterInbox inbox;
  HttpServerPtr server = startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  auto client = RawClient::connect(server->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto item = inbox.take();
  ASSERT_TRUE(item.has_value());
  item->writer->startStream(200, {});
  item->writer->write("one ");
  item->writer->write("two");
  item->writer->finish();
  auto response = client->readResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_FALSE(response->hasHeader("Transfer-Encoding"));
  EXPECT_EQ(response->header("Connection"), "close");
  EXPECT_EQ(response->body, "one two");
}

}  // namespace
}  // namespace tandem::http

namespace tandem::http {
namespace {

// abort() gives up on a client that reads nothing: the connection closes at
// once although megabytes are still queued for it, the queue is dropped
// and onClose runs.
TEST_F(HttpServerStreamTest, AbortClosesAtOnceDroppingWhatIsQueued) {
  std::atomic<int> closes{0};
  writer_->onClose([&] { ++closes; });
  writer_->startStream(200, kEventStream);
  std::string block(1 << 20, 'q');
  for (int i = 0; i < 48; ++i) writer_->write(block);
  ASSERT_TRUE(waitUntil([&] { return writer_->pendingBytes() > (8u << 20); }));
  writer_->abort();
  ASSERT_TRUE(waitUntil([&] { return closes.load() == 1; }));
  EXPECT_TRUE(writer_->closed());
  EXPECT_EQ(writer_->pendingBytes(), 0u);
  // the client sees the reset at once (the kernel's queue is dropped too).
  EXPECT_TRUE(client_->waitClosed(std::chrono::seconds(30)));
  EXPECT_TRUE(waitUntil([&] { return server_->numConnections() == 0; }));
}

}  // namespace
}  // namespace tandem::http
