// An http::ResponseWriter that records what a handler answers (status,
// headers, body or streamed writes, finish) and can play a client that goes
// away (disconnect()). Thread-safe: handlers answer from generator threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/http/http_server.h"

namespace tandem::testing {

class FakeResponseWriter : public http::ResponseWriter {
 public:
  // what was answered so far.
  struct Answer {
    int status = 0;  // 0 = nothing yet
    std::vector<http::HttpHeader> headers;
    bool streaming = false;
    std::string body;  // respond()'s body, or every write() so far
    bool done = false;  // respond() or finish() was called
  };

  Answer answer() const;
  // waits until the answer is done; false after `timeout`.
  bool waitDone(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // the client goes away: runs the onClose callback (once), closed() true.
  void disconnect();

  // http::ResponseWriter
  void respond(int status, std::vector<http::HttpHeader> headers, std::string body) override;
  void startStream(int status, std::vector<http::HttpHeader> headers) override;
  void write(std::string data) override;
  void finish() override;
  bool closed() const override;
  void onClose(std::function<void()> callback) override;
  size_t pendingBytes() const override { return 0; }
  // as the client going away (disconnect()).
  void abort() override { disconnect(); }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  Answer answer_;
  bool closed_ = false;
  std::function<void()> on_close_;
};

}  // namespace tandem::testing
