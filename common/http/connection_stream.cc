#include "common/http/connection_stream.h"

#include <utility>

#include <boost/asio/write.hpp>

namespace tandem::http {

namespace asio = boost::asio;
using boost::system::error_code;

ConnectionStream::ConnectionStream(Socket socket, SslContextPtr ssl) : ssl_(std::move(ssl)) {
  if (ssl_ == nullptr) {
    socket_.emplace(std::move(socket));
  } else {
    tls_ = std::make_unique<TlsStream>(std::move(socket), *ssl_);
  }
}

ConnectionStream::~ConnectionStream() = default;

ConnectionStream::Socket& ConnectionStream::socket() {
  return tls_ != nullptr ? tls_->next_layer() : *socket_;
}

void ConnectionStream::asyncReadSome(asio::mutable_buffer buffer, IoHandler handler) {
  if (tls()) {
    tls_->async_read_some(buffer, std::move(handler));
  } else {
    socket().async_read_some(buffer, std::move(handler));
  }
}

void ConnectionStream::asyncWrite(const std::vector<asio::const_buffer>& buffers, IoHandler handler) {
  if (tls()) {
    asio::async_write(*tls_, buffers, std::move(handler));
  } else {
    asio::async_write(socket(), buffers, std::move(handler));
  }
}

void ConnectionStream::asyncReadRaw(asio::mutable_buffer buffer, IoHandler handler) {
  socket().async_read_some(buffer, std::move(handler));
}

void ConnectionStream::asyncHandshake(asio::const_buffer received, IoHandler handler) {
  tls_->async_handshake(asio::ssl::stream_base::server, received, std::move(handler));
}

void ConnectionStream::shutdownSend() {
  error_code ignored;
  socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void ConnectionStream::close() {
  error_code ignored;
  socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket().close(ignored);
}

void ConnectionStream::reset() {
  error_code ignored;
  socket().set_option(asio::socket_base::linger(true, 0), ignored);
  socket().close(ignored);
}

}  // namespace tandem::http
