// Helpers shared by the HTTP server tests: starting a server on port 0,
// request bytes, waiting on conditions, and an inbox that hands the test
// the writers of requests it wants to answer itself (from its own thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/http/http_server.h"

namespace tandem::http::testing {

// polls `condition` every millisecond; false when it still fails after `timeout`.
bool waitUntil(const std::function<bool()>& condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(30));

// starts a server on 127.0.0.1, port 0; nullptr (and a gtest failure) on error.
HttpServerPtr startServer(HttpServerOptions options, HttpHandler handler);

// "GET target HTTP/1.1" with Host and `extra_headers` (each ending in CRLF).
std::string getRequest(std::string_view target, std::string_view extra_headers = "");
// a POST with Content-Length.
std::string postRequest(std::string_view target, std::string_view body,
                        std::string_view extra_headers = "");

// answers every request at once with 200 and "path=<path> body=<body>".
HttpHandler echoHandler();

// the requests a handler passed on, with their writers, for the test thread.
class WriterInbox {
 public:
  struct Item {
    HttpRequest request;
    ResponseWriterPtr writer;
  };
  // a handler that puts every request here.
  HttpHandler handler();
  void put(HttpRequest request, ResponseWriterPtr writer);
  // the oldest item, waiting up to `timeout`; nullopt when none came.
  std::optional<Item> take(std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<Item> items_;
};

}  // namespace tandem::http::testing
