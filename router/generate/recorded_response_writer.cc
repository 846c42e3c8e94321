#include "router/generate/recorded_response_writer.h"

namespace tandem::router {

RecordedResponseWriter::RecordedResponseWriter(http::ResponseWriterPtr inner, RequestRecordPtr record)
    : inner_(std::move(inner)), record_(std::move(record)) {
  // the inner writer keeps one callback: it tells the call's (onClose)
  // and finishes the record as a client that left (nginx's 499).
  inner_->onClose([state = close_, record = record_] {
    std::function<void()> callback;
    {
      std::lock_guard lock(state->mu);
      state->closed = true;
      callback = std::move(state->callback);
    }
    if (callback) callback();
    record->finish(499);
  });
}

RecordedResponseWriter::~RecordedResponseWriter() { record_->finish(500); }

void RecordedResponseWriter::respond(int status, std::vector<http::HttpHeader> headers,
                                     std::string body) {
  headers.push_back({"X-Request-Id", record_->id()});
  inner_->respond(status, std::move(headers), std::move(body));
  record_->finish(status);
}

void RecordedResponseWriter::startStream(int status, std::vector<http::HttpHeader> headers) {
  {
    std::lock_guard lock(mu_);
    stream_status_ = status;
  }
  headers.push_back({"X-Request-Id", record_->id()});
  inner_->startStream(status, std::move(headers));
}

void RecordedResponseWriter::finish() {
  inner_->finish();
  std::lock_guard lock(mu_);
  record_->finish(stream_status_);
}

void RecordedResponseWriter::abort() {
  inner_->abort();
  record_->finish(499);
}

void RecordedResponseWriter::onClose(std::function<void()> callback) {
  {
    std::lock_guard lock(close_->mu);
    if (!close_->closed) {
      close_->callback = std::move(callback);
      return;
    }
  }
  callback();  // closed already: at once, as the server's writer does
}

RequestRecordPtr requestRecordOf(const http::ResponseWriter& writer) {
  const auto* recorded = dynamic_cast<const RecordedResponseWriter*>(&writer);
  return recorded == nullptr ? nullptr : recorded->record();
}

}  // namespace tandem::router
