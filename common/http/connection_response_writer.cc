#include "common/http/connection_response_writer.h"

#include <utility>

#include "common/http/error_body.h"
#include "common/http/http_connection.h"

namespace tandem::http {

ConnectionResponseWriter::ConnectionResponseWriter(std::shared_ptr<ResponseState> state,
                                                   std::weak_ptr<HttpConnection> connection,
                                                   std::shared_ptr<PostGate> gate,
                                                   ErrorBodyFormatter error_body)
    : state_(std::move(state)),
      connection_(std::move(connection)),
      gate_(std::move(gate)),
      error_body_(std::move(error_body)) {}

ConnectionResponseWriter::~ConnectionResponseWriter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_->closed()) return;
  if (stage_ == Stage::kNone) {
    std::string body = error_body_(500, "the server dropped the request without answering");
    post([state = state_, body = std::move(body)](HttpConnection& connection) mutable {
      connection.respond(state.get(), 500, {{"Content-Type", "application/json"}}, std::move(body));
    });
  } else if (stage_ == Stage::kStreaming) {
    post([state = state_](HttpConnection& connection) { connection.abortResponse(state.get()); });
  }
}

void ConnectionResponseWriter::respond(int status, std::vector<HttpHeader> headers, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_ != Stage::kNone || state_->closed()) return;
  stage_ = Stage::kResponded;
  post([state = state_, status, headers = std::move(headers),
        body = std::move(body)](HttpConnection& connection) mutable {
    connection.respond(state.get(), status, std::move(headers), std::move(body));
  });
}

void ConnectionResponseWriter::startStream(int status, std::vector<HttpHeader> headers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_ != Stage::kNone || state_->closed()) return;
  stage_ = Stage::kStreaming;
  post([state = state_, status, headers = std::move(headers)](HttpConnection& connection) mutable {
    connection.startStream(state.get(), status, std::move(headers));
  });
}

void ConnectionResponseWriter::write(std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  // an empty chunk would end the chunked body, so empty writes are dropped.
  if (stage_ != Stage::kStreaming || data.empty() || state_->closed()) return;
  state_->addPending(data.size());
  post([state = state_, data = std::move(data)](HttpConnection& connection) mutable {
    connection.writeChunk(state.get(), std::move(data));
  });
}

void ConnectionResponseWriter::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_ != Stage::kStreaming) return;
  stage_ = Stage::kFinished;
  if (state_->closed()) return;
  post([state = state_](HttpConnection& connection) { connection.finishStream(state.get()); });
}

bool ConnectionResponseWriter::closed() const { return state_->closed(); }

void ConnectionResponseWriter::onClose(std::function<void()> callback) {
  state_->setOnClose(std::move(callback));
}

size_t ConnectionResponseWriter::pendingBytes() const { return state_->pendingBytes(); }

void ConnectionResponseWriter::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_->closed()) return;
  stage_ = Stage::kFinished;  // nothing more goes out, and the destructor has nothing to cut
  post([state = state_](HttpConnection& connection) { connection.closeResponse(state.get()); });
}

void ConnectionResponseWriter::post(std::function<void(HttpConnection&)> fn) {
  gate_->run([&] {
    // the strong reference dies inside the gate, before the server can
    // destroy the io_context the connection's socket belongs to.
    if (std::shared_ptr<HttpConnection> connection = connection_.lock()) {
      connection->post(std::move(fn));
    }
  });
}

}  // namespace tandem::http
