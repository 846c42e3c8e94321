// An http::ResponseWriter that records the answer it forwards: it adds the
// request's X-Request-Id header and finishes the request's RequestRecord
// (its access line, the release of its id) when the response completes
// (respond(), finish(), abort()), when the client leaves first (499), or,
// never answered, when it is dropped (500, as the server answers then).
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "common/http/http_server.h"
#include "router/generate/request_record.h"

namespace tandem::router {

class RecordedResponseWriter final : public http::ResponseWriter {
 public:
  RecordedResponseWriter(http::ResponseWriterPtr inner, RequestRecordPtr record);
  ~RecordedResponseWriter() override;

  const RequestRecordPtr& record() const { return record_; }

  // http::ResponseWriter
  void respond(int status, std::vector<http::HttpHeader> headers, std::string body) override;
  void startStream(int status, std::vector<http::HttpHeader> headers) override;
  void write(std::string data) override { inner_->write(std::move(data)); }
  void finish() override;
  bool closed() const override { return inner_->closed(); }
  void onClose(std::function<void()> callback) override;
  size_t pendingBytes() const override { return inner_->pendingBytes(); }
  void abort() override;

 private:
  // what the inner writer's one onClose callback shares with this writer.
  struct CloseState {
    std::mutex mu;
    bool closed = false;
    std::function<void()> callback;
  };

  const http::ResponseWriterPtr inner_;
  const RequestRecordPtr record_;
  const std::shared_ptr<CloseState> close_ = std::make_shared<CloseState>();
  std::mutex mu_;
  int stream_status_ = 0;  // guarded by mu_
};

// the record of the request `writer` answers, or null when it is not a
// RecordedResponseWriter.
RequestRecordPtr requestRecordOf(const http::ResponseWriter& writer);

}  // namespace tandem::router
