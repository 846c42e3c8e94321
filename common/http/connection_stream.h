// The byte stream under one HTTP connection: a plain TCP socket, or TLS
// over it (Beast's ssl_stream, OpenSSL). HttpConnection reads and writes
// through it alike; only its start differs (an HTTPS connection handshakes
// first). All calls on the connection's strand.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "common/http/ssl_context_source.h"

namespace tandem::http {

class ConnectionStream {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  // a socket whose completion handlers run on its own strand.
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;
  using IoHandler = std::function<void(const boost::system::error_code&, size_t)>;

  // plain TCP when `ssl` is null, else TLS with that context (kept alive
  // as long as the stream: a reload does not touch open connections).
  ConnectionStream(Socket socket, SslContextPtr ssl);
  ~ConnectionStream();

  // TLS, and not fallen back to plain.
  bool tls() const { return tls_ != nullptr && !plain_; }
  // the TCP socket under it all.
  Socket& socket();

  // reads what the client sent, decrypted when TLS.
  void asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler handler);
  // writes all of `buffers` (which must stay valid until `handler` runs).
  void asyncWrite(const std::vector<boost::asio::const_buffer>& buffers, IoHandler handler);

  // TLS only, before anything else: reads raw bytes off the socket (to look
  // at the first one), then handshakes as the server with them.
  void asyncReadRaw(boost::asio::mutable_buffer buffer, IoHandler handler);
  void asyncHandshake(boost::asio::const_buffer received, IoHandler handler);
  // before the handshake: speak plain bytes from now on (to answer a client
  // that sent plain HTTP to the TLS port with an error it can read).
  void fallBackToPlain() { plain_ = true; }

  // TCP half-close / close. No TLS close_notify is sent: responses are
  // framed (length or last chunk), so a client never mistakes the end.
  void shutdownSend();
  void close();
  // closes with a reset (SO_LINGER 0): what the kernel still holds for the
  // client is dropped at once and the client sees ECONNRESET.
  void reset();

 private:
  using TlsStream = boost::beast::ssl_stream<Socket>;

  SslContextPtr ssl_;                 // declared first: tls_ refers to it
  std::optional<Socket> socket_;      // plain connections
  std::unique_ptr<TlsStream> tls_;    // TLS connections (owns the socket)
  bool plain_ = false;
};

}  // namespace tandem::http
