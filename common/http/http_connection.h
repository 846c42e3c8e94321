// One accepted TCP connection: reads requests with Beast's parser, hands
// each complete request to the handler, and writes the response the
// handler's ResponseWriter sends, in order, one request at a time. On an
// HTTPS server it first handshakes TLS (within request_timeout); a client
// that sends plain HTTP instead gets a plain 400 and the connection closes.
//
// Everything below runs on the connection's strand, so no member needs a
// lock. A read is outstanding on the socket at all times (also while a
// response is pending), which is how a client that goes away mid-stream is
// noticed without writing to it.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "common/http/connection_registry.h"
#include "common/http/connection_stream.h"
#include "common/http/http_server.h"
#include "common/http/post_gate.h"
#include "common/http/request_parser.h"
#include "common/http/response_encoder.h"

namespace tandem::http {

class ResponseState;

// what every connection of one server shares.
struct ConnectionContext {
  HttpServerOptions options;
  HttpHandler handler;
  std::shared_ptr<PostGate> gate = std::make_shared<PostGate>();
  ConnectionRegistry registry;
  // set by shutdown: answer what is in progress with Connection: close.
  std::atomic<bool> draining{false};
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  using Strand = ConnectionStream::Strand;
  // a socket whose completion handlers run on its own strand.
  using Socket = ConnectionStream::Socket;

  // `context` outlives every connection's I/O: the server stops its threads
  // before it goes. `ssl`: the TLS context to handshake with; null = plain HTTP.
  HttpConnection(ConnectionContext* context, Socket socket, SslContextPtr ssl = nullptr);
  ~HttpConnection();

  // begins reading requests.
  void start();
  // answers 503 and closes: the server serves as many connections as
  // allowed (over TLS, after the handshake).
  void reject();
  // server shutdown: close when idle, else after the request in progress.
  void drain();
  // server shutdown after its grace period: close now.
  void forceClose();

  // runs `fn` on this connection's strand. Used by ResponseWriter, from any thread.
  void post(std::function<void(HttpConnection&)> fn);

  // the ResponseWriter's calls, on the strand. Each is ignored unless
  // `state` belongs to the request being answered and the connection is open.
  void respond(ResponseState* state, int status, std::vector<HttpHeader> headers,
               std::string body);
  void startStream(ResponseState* state, int status, std::vector<HttpHeader> headers);
  void writeChunk(ResponseState* state, std::string data);
  void finishStream(ResponseState* state);
  // a writer dropped mid-stream: the client must see the body cut short.
  void abortResponse(ResponseState* state);
  // ResponseWriter::abort(): reset now, dropping what is queued.
  void closeResponse(ResponseState* state);

 private:
  enum class Phase {
    kHandshake,       // TLS: waiting for the client's hello, handshaking (request_timeout)
    kIdle,            // waiting for the first byte of a request (idle_timeout)
    kReadingRequest,  // head or body incomplete (request_timeout)
    kResponding,      // handler has the request; reads only detect a close
    kErrorResponse,   // writing the server's own error, then close
    kLingering,       // sent all, write side shut; draining input until EOF
    kClosed,
  };
  struct Output {
    std::string bytes;
    size_t counted = 0;          // bytes of write() data, for pendingBytes()
    bool ends_response = false;  // the last piece of a response
  };

  void startHandshake();
  void onRawRead(const boost::system::error_code& ec, size_t bytes);
  void onHandshake(const boost::system::error_code& ec);
  void enterIdle();
  void beginRequest();
  void processInput();
  void maybeSendContinue();
  void failRequest(const boost::system::error_code& ec);
  void dispatchRequest();
  void sendErrorAndClose(int status, std::string message);
  bool answers(const ResponseState* state) const;
  ConnectionHeader connectionHeader() const;

  void startRead();
  void onRead(const boost::system::error_code& ec, size_t bytes);
  void enqueue(Output output);
  void flush();
  void onWrite(const boost::system::error_code& ec);
  void onResponseDone();

  void armTimer(std::chrono::milliseconds timeout);
  void cancelTimer();
  void onTimer();
  void beginLinger();
  // closes the connection (a reset when `reset`, see closeResponse).
  void closeNow(bool reset = false);

  using Timer = boost::asio::basic_waitable_timer<
      std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Strand>;

  ConnectionContext* context_;
  ConnectionStream stream_;
  Strand strand_;
  Timer timer_;
  uint64_t timer_generation_ = 0;  // a wait from an older arm is stale
  std::string remote_address_;
  Phase phase_ = Phase::kIdle;
  bool reject_after_handshake_ = false;  // reject() on a TLS connection

  // the socket is read into read_chunk_ and appended to input_, so the
  // outstanding read never aliases what the parser is looking at.
  std::array<char, 16 * 1024> read_chunk_;
  bool reading_ = false;
  boost::beast::flat_buffer input_;
  std::optional<RequestParser> parser_;
  bool continue_sent_ = false;

  // the request being answered.
  std::shared_ptr<ResponseState> state_;
  bool close_after_ = false;  // no keep-alive after this response
  bool http10_ = false;
  bool head_request_ = false;
  bool streaming_ = false;
  bool body_suppressed_ = false;  // HEAD, or a status without a body
  bool aborted_ = false;          // the writer went away mid-stream

  std::deque<Output> output_;
  std::vector<boost::asio::const_buffer> write_buffers_;
  size_t writes_in_flight_ = 0;  // entries of output_ being written
  bool writing_ = false;
  // the client closed its side while a write was in flight: decided when
  // that write completes (it may carry the response's last byte); the
  // connection closes then, without reading again.
  bool peer_eof_ = false;
};

}  // namespace tandem::http
