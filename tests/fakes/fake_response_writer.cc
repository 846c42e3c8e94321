#include "tests/fakes/fake_response_writer.h"

#include <utility>

namespace tandem::testing {

FakeResponseWriter::Answer FakeResponseWriter::answer() const {
  std::lock_guard lock(mu_);
  return answer_;
}

bool FakeResponseWriter::waitDone(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [this] { return answer_.done; });
}

void FakeResponseWriter::disconnect() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    callback = std::move(on_close_);
  }
  if (callback) callback();
}

void FakeResponseWriter::respond(int status, std::vector<http::HttpHeader> headers,
                                 std::string body) {
  std::lock_guard lock(mu_);
  answer_.status = status;
  answer_.headers = std::move(headers);
  answer_.body = std::move(body);
  answer_.done = true;
  changed_.notify_all();
}

void FakeResponseWriter::startStream(int status, std::vector<http::HttpHeader> headers) {
  std::lock_guard lock(mu_);
  answer_.status = status;
  answer_.headers = std::move(headers);
  answer_.streaming = true;
  changed_.notify_all();
}

void FakeResponseWriter::write(std::string data) {
  std::lock_guard lock(mu_);
  answer_.body += data;
  changed_.notify_all();
}

void FakeResponseWriter::finish() {
  std::lock_guard lock(mu_);
  answer_.done = true;
  changed_.notify_all();
}

bool FakeResponseWriter::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void FakeResponseWriter::onClose(std::function<void()> callback) {
  std::lock_guard lock(mu_);
  on_close_ = std::move(callback);
}

}  // namespace tandem::testing
