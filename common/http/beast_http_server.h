// HttpServer on Boost.Beast over Boost.Asio.
//
// Why Beast: it ships with Debian (libboost-dev, header-only), is
// maintained, and gives an exact, incremental HTTP/1.1 request parser with
// header and body limits that we drive from our own async reads; Asio gives
// one io_context run by a few threads and a strand per connection, so a
// handler's answer can be posted from any thread without locks in the
// connection.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/http/http_connection.h"
#include "common/http/http_server.h"
#include "common/http/ssl_context_source.h"

namespace tandem::http {

class BeastHttpServer : public HttpServer {
 public:
  // validates `options`, binds, listens and starts the I/O threads.
  static absl::StatusOr<HttpServerPtr> create(const HttpServerOptions& options,
                                              HttpHandler handler);
  // shutdown(0): closes every connection and joins the I/O threads.
  ~BeastHttpServer() override;

  // HttpServer
  int port() const override { return port_; }
  // must not be called from an I/O thread (a handler or an onClose
  // callback): it joins those threads.
  void shutdown(std::chrono::milliseconds grace) override;
  int numConnections() const override;

 private:
  using Strand = HttpConnection::Strand;

  BeastHttpServer(const HttpServerOptions& options, HttpHandler handler);
  absl::Status listen();
  absl::Status startThreads();
  void runIoLoop();
  void accept();
  void onAccept(const boost::system::error_code& ec, HttpConnection::Socket socket);
  void stopAccepting();
  void stopIoThreads();

  // declared first: connections point at it until the io_context is gone.
  std::unique_ptr<ConnectionContext> context_;
  // HTTPS: the context new connections handshake with; null = plain HTTP.
  std::unique_ptr<SslContextSource> ssl_;
  boost::asio::io_context io_context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Strand> acceptor_;
  boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                    boost::asio::wait_traits<std::chrono::steady_clock>, Strand>
      accept_retry_timer_;
  std::vector<std::thread> threads_;
  int port_ = 0;

  std::mutex shutdown_mu_;  // held for the whole shutdown: a second caller waits for the first
  bool stopped_ = false;
};

}  // namespace tandem::http
