#include "tests/common/http/server_test_util.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "router/openai/api_error.h"

namespace tandem::http::testing {

bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

HttpServerPtr startServer(HttpServerOptions options, HttpHandler handler) {
  options.host = "127.0.0.1";
  options.port = 0;
  // the OpenAI front end's error bodies, which the limit tests check.
  options.error_body = openai::serverErrorBody;
  absl::StatusOr<HttpServerPtr> server = HttpServer::start(options, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_GT((*server)->port(), 0);
  return std::move(*server);
}

std::string getRequest(std::string_view target, std::string_view extra_headers) {
  std::string request = "GET ";
  request.append(target).append(" HTTP/1.1\r\nHost: localhost\r\n").append(extra_headers).append("\r\n");
  return request;
}

std::string postRequest(std::string_view target, std::string_view body, std::string_view extra_headers) {
  std::string request = "POST ";
  request.append(target).append(" HTTP/1.1\r\nHost: localhost\r\nContent-Length: ");
  request.append(std::to_string(body.size())).append("\r\n").append(extra_headers).append("\r\n");
  request.append(body);
  return request;
}

HttpHandler echoHandler() {
  return [](HttpRequest request, ResponseWriterPtr writer) {
    writer->respond(200, {{"Content-Type", "text/plain"}},
                    absl::StrCat("path=", request.path, " body=", request.body));
  };
}

HttpHandler WriterInbox::handler() {
  return [this](HttpRequest request, ResponseWriterPtr writer) {
    put(std::move(request), std::move(writer));
  };
}

void WriterInbox::put(HttpRequest request, ResponseWriterPtr writer) {
  std::lock_guard<std::mutex> lock(mu_);
  items_.push_back(Item{std::move(request), std::move(writer)});
  arrived_.notify_all();
}

std::optional<WriterInbox::Item> WriterInbox::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!arrived_.wait_for(lock, timeout, [this] { return !items_.empty(); })) return std::nullopt;
  Item item = std::move(items_.front());
  items_.pop_front();
  return item;
}

}  // namespace tandem::http::testing
