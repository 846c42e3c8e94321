#include "common/http/http_connection.h"

#include <algorithm>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include "absl/strings/str_cat.h"
#include "common/http/connection_response_writer.h"
#include "common/http/request_parser.h"
#include "common/http/response_state.h"

namespace tandem::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

// a client that neither reads our error response nor closes after the last
// response must not hold the connection for long.
constexpr std::chrono::milliseconds kErrorWriteTimeout{2000};
constexpr std::chrono::milliseconds kLingerTimeout{500};
// while a handler works, input (pipelined requests) is kept up to this much
// beyond the head limit; then reading pauses until the response is done.
constexpr size_t kMaxInputWhileResponding = 64 * 1024;
// entries of the output queue gathered into one write.
constexpr size_t kMaxBuffersPerWrite = 64;

// the client closed its side: a TCP EOF, or over TLS a close_notify (EOF)
// or a plain TCP close without one (truncated).
bool isEof(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

std::string formatEndpoint(const asio::ip::tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  if (address.is_v6()) return absl::StrCat("[", address.to_string(), "]:", endpoint.port());
  return absl::StrCat(address.to_string(), ":", endpoint.port());
}

}  // namespace

HttpConnection::HttpConnection(ConnectionContext* context, Socket socket, SslContextPtr ssl)
    : context_(context),
      stream_(std::move(socket), std::move(ssl)),
      strand_(stream_.socket().get_executor()),
      timer_(strand_) {
  error_code ec;
  asio::ip::tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_address_ = formatEndpoint(peer);
}

HttpConnection::~HttpConnection() {
  // only reached open when the server's io_context is torn down with this
  // connection's handlers still queued; writers must still see the close.
  if (state_) state_->markClosed();
}

void HttpConnection::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stream_.tls()) {
      self->startHandshake();
      return;
    }
    self->enterIdle();
    self->startRead();
  });
}

void HttpConnection::reject() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stream_.tls()) {
      // the client can read nothing before the handshake.
      self->reject_after_handshake_ = true;
      self->startHandshake();
      return;
    }
    self->sendErrorAndClose(503, "the server has too many open connections; retry later");
    self->startRead();
  });
}

void HttpConnection::drain() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->phase_ == Phase::kClosed) return;
    self->close_after_ = true;
    if (self->phase_ == Phase::kIdle || self->phase_ == Phase::kHandshake) self->closeNow();
  });
}

void HttpConnection::forceClose() {
  asio::post(strand_, [self = shared_from_this()] { self->closeNow(); });
}

void HttpConnection::post(std::function<void(HttpConnection&)> fn) {
  asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] { fn(*self); });
}

// ---- the TLS handshake ----

void HttpConnection::startHandshake() {
  phase_ = Phase::kHandshake;
  // a client that connects and never completes the handshake is cut off
  // like one that never completes its request.
  armTimer(context_->options.request_timeout);
  reading_ = true;
  stream_.asyncReadRaw(asio::buffer(read_chunk_),
                       [self = shared_from_this()](const error_code& ec, size_t bytes) {
                         self->onRawRead(ec, bytes);
                       });
}

void HttpConnection::onRawRead(const error_code& ec, size_t bytes) {
  reading_ = false;
  if (phase_ != Phase::kHandshake) return;
  if (ec || bytes == 0) {
    closeNow();
    return;
  }
  // every TLS connection opens with a handshake record (content type 22);
  // anything else is most likely plain HTTP sent to the HTTPS port.
  constexpr unsigned char kTlsHandshakeRecord = 0x16;
  if (static_cast<unsigned char>(read_chunk_[0]) != kTlsHandshakeRecord) {
    stream_.fallBackToPlain();
    sendErrorAndClose(400, "this port speaks HTTPS: the request was sent as plain HTTP");
    startRead();
    return;
  }
  stream_.asyncHandshake(asio::buffer(read_chunk_.data(), bytes),
                         [self = shared_from_this()](const error_code& ec, size_t) {
                           self->onHandshake(ec);
                         });
}

void HttpConnection::onHandshake(const error_code& ec) {
  if (phase_ != Phase::kHandshake) return;
  if (ec) {
    closeNow();  // not a TLS client we can talk to (or no valid client certificate)
    return;
  }
  if (reject_after_handshake_) {
    sendErrorAndClose(503, "the server has too many open connections; retry later");
  } else {
    enterIdle();
  }
  startRead();
}

// ---- reading requests ----

void HttpConnection::enterIdle() {
  phase_ = Phase::kIdle;
  if (context_->draining.load()) {
    closeNow();
    return;
  }
  armTimer(context_->options.idle_timeout);
  processInput();  // pipelined requests may be buffered already
}

void HttpConnection::beginRequest() {
  parser_.emplace();
  configureRequestParser(*parser_, context_->options);
  continue_sent_ = false;
  phase_ = Phase::kReadingRequest;
  // the whole head and body must arrive within request_timeout of the first
  // byte, so a client trickling bytes cannot hold the connection.
  armTimer(context_->options.request_timeout);
}

void HttpConnection::processInput() {
  while (phase_ == Phase::kIdle || phase_ == Phase::kReadingRequest) {
    if (input_.size() == 0) return;
    if (phase_ == Phase::kIdle) beginRequest();
    error_code ec;
    size_t used = parseRequestBytes(*parser_, input_.data(), ec);
    input_.consume(used);
    if (ec == bhttp::error::need_more) {
      maybeSendContinue();
      return;
    }
    if (ec) {
      failRequest(ec);
      return;
    }
    if (parser_->is_done()) {
      dispatchRequest();
      return;
    }
    maybeSendContinue();
    if (used == 0) return;
  }
}

void HttpConnection::maybeSendContinue() {
  if (continue_sent_ || !parser_ || !parser_->is_header_done() || parser_->is_done()) return;
  const auto& message = parser_->get();
  if (message.version() < 11) return;
  if (!beast::iequals(message[bhttp::field::expect], "100-continue")) return;
  // the client holds the body back until told; the length is acceptable,
  // or the parser would have failed with body_limit already.
  continue_sent_ = true;
  enqueue(Output{std::string(kContinueResponse), 0, false});
}

void HttpConnection::failRequest(const error_code& ec) {
  const HttpServerOptions& options = context_->options;
  if (ec == bhttp::error::header_limit) {
    sendErrorAndClose(431, absl::StrCat("request head larger than ", options.max_header_bytes, " bytes"));
  } else if (ec == bhttp::error::body_limit) {
    sendErrorAndClose(413, absl::StrCat("request body larger than ", options.max_body_bytes, " bytes"));
  } else {
    sendErrorAndClose(400, absl::StrCat("malformed HTTP request: ", ec.message()));
  }
}

void HttpConnection::dispatchRequest() {
  const auto& message = parser_->get();
  http10_ = message.version() < 11;
  head_request_ = message.method() == bhttp::verb::head;
  close_after_ = close_after_ || !message.keep_alive() || context_->draining.load();
  HttpRequest request = takeRequest(*parser_, remote_address_);
  streaming_ = false;
  body_suppressed_ = head_request_;
  parser_.reset();

  phase_ = Phase::kResponding;
  cancelTimer();  // the handler's pace is not the client's fault
  state_ = std::make_shared<ResponseState>();
  auto writer = std::make_shared<ConnectionResponseWriter>(state_, weak_from_this(), context_->gate,
                                                           context_->options.error_body);
  try {
    context_->handler(std::move(request), std::move(writer));
  } catch (...) {
    // a throwing handler drops its writer, which answers 500; nothing may
    // escape into the I/O loop.
  }
}

void HttpConnection::sendErrorAndClose(int status, std::string message) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kErrorResponse;
  close_after_ = true;
  parser_.reset();
  input_.consume(input_.size());
  enqueue(Output{encodeErrorResponse(status, context_->options.error_body(status, message)), 0, true});
  armTimer(kErrorWriteTimeout);
}

// ---- answering (the ResponseWriter's calls) ----

bool HttpConnection::answers(const ResponseState* state) const {
  return phase_ == Phase::kResponding && state != nullptr && state == state_.get();
}

ConnectionHeader HttpConnection::connectionHeader() const {
  if (close_after_) return ConnectionHeader::kClose;
  return http10_ ? ConnectionHeader::kKeepAlive : ConnectionHeader::kOmit;
}

void HttpConnection::respond(ResponseState* state, int status, std::vector<HttpHeader> headers,
                             std::string body) {
  if (!answers(state)) return;
  BodyFraming framing = statusHasNoBody(status) ? BodyFraming::kNone : BodyFraming::kContentLength;
  std::string head = encodeResponseHead(status, headers, framing, body.size(), connectionHeader());
  bool sends_body = framing != BodyFraming::kNone && !body_suppressed_ && !body.empty();
  // head and body go out in one gathered write; the body is not copied.
  enqueue(Output{std::move(head), 0, !sends_body});
  if (sends_body) enqueue(Output{std::move(body), 0, true});
}

void HttpConnection::startStream(ResponseState* state, int status, std::vector<HttpHeader> headers) {
  if (!answers(state)) return;
  streaming_ = true;
  BodyFraming framing = BodyFraming::kChunked;
  if (statusHasNoBody(status)) {
    framing = BodyFraming::kNone;
    body_suppressed_ = true;
  } else if (http10_) {
    // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
    framing = BodyFraming::kUntilClose;
    close_after_ = true;
  }
  enqueue(Output{encodeResponseHead(status, headers, framing, 0, connectionHeader()), 0, false});
}

void HttpConnection::writeChunk(ResponseState* state, std::string data) {
  size_t counted = data.size();
  if (!answers(state) || !streaming_) {
    if (state != nullptr) state->removePending(counted);
    return;
  }
  std::string bytes;
  if (!body_suppressed_) bytes = http10_ ? std::move(data) : encodeChunk(data);
  enqueue(Output{std::move(bytes), counted, false});
}

void HttpConnection::finishStream(ResponseState* state) {
  if (!answers(state) || !streaming_) return;
  bool framed = !body_suppressed_ && !http10_;
  enqueue(Output{framed ? std::string(kLastChunk) : std::string(), 0, true});
}

void HttpConnection::abortResponse(ResponseState* state) {
  if (!answers(state)) return;
  // what was written goes out first; then the connection closes with the
  // body unterminated.
  aborted_ = true;
  close_after_ = true;
  enqueue(Output{std::string(), 0, true});
}

void HttpConnection::closeResponse(ResponseState* state) {
  if (!answers(state)) return;
  // a reset, not a FIN behind the queue: the kernel's send buffer (up to
  // megabytes) would otherwise keep trickling to a client that stopped
  // reading, through its small window, holding memory for a response that
  // was given up (as nginx's reset_timedout_connection).
  closeNow(/*reset=*/true);
}

// ---- socket I/O ----

void HttpConnection::startRead() {
  if (reading_ || phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kResponding &&
      input_.size() >= context_->options.max_header_bytes + kMaxInputWhileResponding) {
    return;  // resumed when the response is done
  }
  reading_ = true;
  stream_.asyncReadSome(asio::buffer(read_chunk_),
                        [self = shared_from_this()](const error_code& ec, size_t bytes) {
                          self->onRead(ec, bytes);
                        });
}

void HttpConnection::onRead(const error_code& ec, size_t bytes) {
  reading_ = false;
  if (phase_ == Phase::kClosed) return;
  if (isEof(ec) && phase_ == Phase::kErrorResponse) {
    return;  // a half-closed client may still read our error; linger reads again
  }
  if (ec) {
    // EOF with a write in flight: the client may have read the whole
    // response and closed before the write's handler ran. Let it run: a
    // response it completes is not a disconnect.
    if (isEof(ec) && writing_) {
      peer_eof_ = true;
      return;
    }
    // EOF or reset: the client is gone. Mid-response this is the disconnect
    // that cancels the request (onClose).
    closeNow();
    return;
  }
  if (phase_ == Phase::kErrorResponse || phase_ == Phase::kLingering) {
    startRead();  // discard: closing at once could reset the client before it reads our answer
    return;
  }
  input_.commit(asio::buffer_copy(input_.prepare(bytes), asio::buffer(read_chunk_.data(), bytes)));
  processInput();
  startRead();
}

void HttpConnection::enqueue(Output output) {
  output_.push_back(std::move(output));
  flush();
}

void HttpConnection::flush() {
  if (writing_ || phase_ == Phase::kClosed || output_.empty()) return;
  size_t count = std::min(output_.size(), kMaxBuffersPerWrite);
  write_buffers_.clear();
  for (size_t i = 0; i < count; ++i) write_buffers_.push_back(asio::buffer(output_[i].bytes));
  writes_in_flight_ = count;
  writing_ = true;
  stream_.asyncWrite(write_buffers_,
                     [self = shared_from_this()](const error_code& ec, size_t) { self->onWrite(ec); });
}

void HttpConnection::onWrite(const error_code& ec) {
  writing_ = false;
  if (phase_ == Phase::kClosed) {
    output_.clear();
    return;
  }
  if (ec) {
    closeNow();
    return;
  }
  size_t sent = 0;
  bool ended = false;
  for (size_t i = 0; i < writes_in_flight_; ++i) {
    sent += output_.front().counted;
    ended = ended || output_.front().ends_response;
    output_.pop_front();
  }
  writes_in_flight_ = 0;
  if (sent > 0 && state_) state_->removePending(sent);
  if (ended) onResponseDone();  // reads again: a closed client is seen then
  if (peer_eof_) {
    // the client closed while this write was in flight. Mid-response that
    // is a disconnect (onClose runs); after the response's last byte it is
    // an ordinary close. Either way close now: a read after EOF is never
    // answered (Asio's edge-triggered reactor reports EOF once), so the
    // connection would otherwise linger until idle_timeout.
    closeNow();
    return;
  }
  flush();
}

void HttpConnection::onResponseDone() {
  if (aborted_) {
    closeNow();  // the response did not complete: onClose runs
    return;
  }
  if (state_) {
    state_->markComplete();
    state_.reset();
  }
  streaming_ = false;
  if (phase_ == Phase::kErrorResponse || (close_after_ && input_.size() > 0)) {
    beginLinger();  // the client may still be sending
    return;
  }
  if (close_after_) {
    closeNow();  // everything the client sent was read: no reset can hit it
    return;
  }
  enterIdle();
  startRead();
}

// ---- timers and closing ----

void HttpConnection::armTimer(std::chrono::milliseconds timeout) {
  uint64_t generation = ++timer_generation_;
  timer_.expires_after(timeout);
  timer_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
    if (ec || generation != self->timer_generation_) return;
    self->onTimer();
  });
}

void HttpConnection::cancelTimer() {
  ++timer_generation_;
  timer_.cancel();
}

void HttpConnection::onTimer() {
  switch (phase_) {
    case Phase::kHandshake:
    case Phase::kIdle:
    case Phase::kErrorResponse:
    case Phase::kLingering:
      closeNow();
      break;
    case Phase::kReadingRequest:
      sendErrorAndClose(408, absl::StrCat("request not received within ",
                                          context_->options.request_timeout.count(), " ms"));
      break;
    case Phase::kResponding:
    case Phase::kClosed:
      break;
  }
}

void HttpConnection::beginLinger() {
  // shut our side, then read until the client closes (or kLingerTimeout):
  // closing with unread input would reset the connection and could destroy
  // the response before the client read it.
  phase_ = Phase::kLingering;
  stream_.shutdownSend();
  parser_.reset();
  input_.consume(input_.size());
  armTimer(kLingerTimeout);
  startRead();
}

void HttpConnection::closeNow(bool reset) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  cancelTimer();
  if (reset) {
    stream_.reset();
  } else {
    stream_.close();
  }
  if (!writing_) output_.clear();  // else the aborted write's handler clears it
  parser_.reset();
  std::shared_ptr<ResponseState> state = std::move(state_);
  if (state) state->markClosed();  // runs onClose when the response was cut short
  context_->registry.remove(this);
}

}  // namespace tandem::http
