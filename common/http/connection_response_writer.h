// The ResponseWriter the server hands to a handler. It may be called from
// any thread at any time: each call is checked against the writer's stage
// (respond once, or startStream, write..., finish) and posted onto the
// connection's strand, where the bytes are queued. The writer holds the
// connection only weakly, so a writer kept after its client or the whole
// server went away costs nothing and does nothing.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/http/http_server.h"
#include "common/http/post_gate.h"
#include "common/http/response_state.h"

namespace tandem::http {

class HttpConnection;

class ConnectionResponseWriter : public ResponseWriter {
 public:
  ConnectionResponseWriter(std::shared_ptr<ResponseState> state,
                           std::weak_ptr<HttpConnection> connection,
                           std::shared_ptr<PostGate> gate, ErrorBodyFormatter error_body);
  // answers 500 when nothing was sent; cuts a started stream short (the
  // client sees an unterminated chunked body, not a false success).
  ~ConnectionResponseWriter() override;

  // ResponseWriter
  void respond(int status, std::vector<HttpHeader> headers, std::string body) override;
  void startStream(int status, std::vector<HttpHeader> headers) override;
  void write(std::string data) override;
  void finish() override;
  bool closed() const override;
  void onClose(std::function<void()> callback) override;
  size_t pendingBytes() const override;
  void abort() override;

 private:
  enum class Stage { kNone, kResponded, kStreaming, kFinished };

  // runs `fn` on the connection's strand unless the connection or the
  // server is gone. Called with mu_ held, so calls reach the strand in the
  // order their stage checks passed.
  void post(std::function<void(HttpConnection&)> fn);

  const std::shared_ptr<ResponseState> state_;
  const std::weak_ptr<HttpConnection> connection_;
  const std::shared_ptr<PostGate> gate_;
  const ErrorBodyFormatter error_body_;
  std::mutex mu_;
  Stage stage_ = Stage::kNone;
};

}  // namespace tandem::http
