// The asynchronous client against the real server on loopback: a response
// arrives as onStart, onHead, onBody and onComplete in order; a kept
// connection serves the next exchange; a refused connection and a client
// shut down fail with their kinds.
#include "common/http/async_http_client.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

// records what an exchange reported; `ended` is set at its last call.
class RecordingHandler : public AsyncHttpHandler {
 public:
  void onStart(Clock::time_point) override { events.push_back("start"); }
  void onHead(int status) override { events.push_back("head " + std::to_string(status)); }
  void onBody(std::string_view bytes, Clock::time_point) override { body.append(bytes); }
  bool onComplete() override {
    events.push_back("complete");
    ended.set_value();
    return true;
  }
  void onFailure(AsyncHttpFailure f) override {
    events.push_back("failure " + std::to_string(f.kind));
    ended.set_value();
  }

  std::vector<std::string> events;
  std::string body;
  std::promise<void> ended;
};

// runs one exchange to its end: the handler, done.
std::shared_ptr<RecordingHandler> exchange(AsyncHttpClient& client, AsyncHttpRequest request) {
  auto handler = std::make_shared<RecordingHandler>();
  std::future<void> ended = handler->ended.get_future();
  client.start(std::move(request), handler);
  EXPECT_EQ(ended.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  return handler;
}

TEST(AsyncHttpClientTest, ReportsAResponseInOrderAndKeepsTheConnection) {
  HttpServerPtr server = testing::startServer({}, testing::echoHandler());
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::unique_ptr<AsyncHttpClient>> client =
      AsyncHttpClient::create("127.0.0.1", std::to_string(server->port()), {});
  ASSERT_TRUE(client.ok()) << client.status();
  for (int i = 0; i < 2; ++i) {
    auto h = exchange(**client, {.target = "/echo", .body = "hi"});
    EXPECT_EQ(h->events, (std::vector<std::string>{"start", "head 200", "complete"}));
    EXPECT_EQ(h->body, "path=/echo body=hi");
  }
  EXPECT_EQ((*client)->connectionsOpened(), 1);
}

TEST(AsyncHttpClientTest, ARefusedConnectionAndAClientShutDownFailWithTheirKinds) {
  absl::StatusOr<std::unique_ptr<AsyncHttpClient>> client = AsyncHttpClient::create("127.0.0.1", "1", {});
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(exchange(**client, {.target = "/"})->events,
            (std::vector<std::string>{"start", "failure " + std::to_string(AsyncHttpFailure::kConnect)}));
  (*client)->shutdown();
  EXPECT_EQ(exchange(**client, {.target = "/"})->events,
            (std::vector<std::string>{"failure " + std::to_string(AsyncHttpFailure::kCancelled)}));
}

}  // namespace
}  // namespace tandem::http
