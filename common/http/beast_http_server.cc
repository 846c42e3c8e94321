#include "common/http/beast_http_server.h"

#include <future>
#include <string>
#include <system_error>
#include <utility>

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "common/crash_report.h"

namespace tandem::http {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using asio::ip::tcp;

// an accept that fails (out of file descriptors) is retried after this
// pause instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
// after the grace period, forced closes run on the strands at once; this
// only bounds a shutdown whose I/O threads are blocked by a handler.
constexpr std::chrono::milliseconds kForcedCloseWait{2000};

absl::Status validate(const HttpServerOptions& options, const HttpHandler& handler) {
  if (!handler) return absl::InvalidArgumentError("http server: no handler");
  if (!options.error_body) return absl::InvalidArgumentError("http server: no error_body");
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("http server: bad port ", options.port));
  }
  if (options.num_threads < 1 || options.num_threads > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("http server: num_threads must be in [1, 1024], got ",
                                                   options.num_threads));
  }
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError("http server: max_connections must be at least 1");
  }
  if (options.max_header_bytes < 64 || options.max_header_bytes > UINT32_MAX) {
    return absl::InvalidArgumentError("http server: max_header_bytes must be in [64, 2^32)");
  }
  if (options.request_timeout.count() <= 0 || options.idle_timeout.count() <= 0) {
    return absl::InvalidArgumentError("http server: timeouts must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HttpServerPtr> BeastHttpServer::create(const HttpServerOptions& options,
                                                      HttpHandler handler) {
  if (absl::Status status = validate(options, handler); !status.ok()) return status;
  std::unique_ptr<BeastHttpServer> server(new BeastHttpServer(options, std::move(handler)));
  if (options.tls != nullptr) {
    absl::StatusOr<std::unique_ptr<SslContextSource>> ssl = SslContextSource::create(options.tls);
    if (!ssl.ok()) return ssl.status();
    server->ssl_ = *std::move(ssl);
  }
  if (absl::Status status = server->listen(); !status.ok()) return status;
  if (absl::Status status = server->startThreads(); !status.ok()) return status;
  return HttpServerPtr(std::move(server));
}

BeastHttpServer::BeastHttpServer(const HttpServerOptions& options, HttpHandler handler)
    : context_(std::make_unique<ConnectionContext>()),
      io_context_(options.num_threads),
      work_(io_context_.get_executor()),
      acceptor_(asio::make_strand(io_context_)),
      accept_retry_timer_(acceptor_.get_executor()) {
  context_->options = options;
  context_->handler = std::move(handler);
}

BeastHttpServer::~BeastHttpServer() { shutdown(std::chrono::milliseconds(0)); }

absl::Status BeastHttpServer::listen() {
  const HttpServerOptions& options = context_->options;
  error_code ec;
  tcp::endpoint endpoint;
  asio::ip::address address = asio::ip::make_address(options.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<unsigned short>(options.port));
  } else {
    tcp::resolver resolver(io_context_);
    auto results = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec || results.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("http server: cannot resolve host '", options.host,
                                                     "': ", ec.message()));
    }
    endpoint = results.begin()->endpoint();
  }
  std::string where = absl::StrCat(options.host, ":", options.port);
  if (acceptor_.open(endpoint.protocol(), ec); ec) {
    return absl::UnavailableError(absl::StrCat("http server: cannot open a socket for ", where, ": ", ec.message()));
  }
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (acceptor_.bind(endpoint, ec); ec) {
    return absl::UnavailableError(absl::StrCat("http server: cannot bind ", where, ": ", ec.message()));
  }
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return absl::UnavailableError(absl::StrCat("http server: cannot listen on ", where, ": ", ec.message()));
  }
  tcp::endpoint bound = acceptor_.local_endpoint(ec);
  if (ec) return absl::UnavailableError(absl::StrCat("http server: no local address: ", ec.message()));
  port_ = bound.port();
  return absl::OkStatus();
}

absl::Status BeastHttpServer::startThreads() {
  accept();
  try {
    for (int i = 0; i < context_->options.num_threads; ++i) {
      threads_.emplace_back([this] {
        crash::useAltStackOnThisThread();
        runIoLoop();
      });
    }
  } catch (const std::system_error& error) {
    return absl::ResourceExhaustedError(absl::StrCat("http server: cannot start I/O threads: ", error.what()));
  }
  return absl::OkStatus();
}

void BeastHttpServer::runIoLoop() {
  for (;;) {
    try {
      io_context_.run();
      return;
    } catch (...) {
      // handlers catch their own failures; whatever still escapes (an
      // allocation failure inside asio) must not end the process, only that
      // handler.
    }
  }
}

void BeastHttpServer::accept() {
  if (!acceptor_.is_open()) return;
  acceptor_.async_accept(asio::make_strand(io_context_),
                         [this](const error_code& ec, HttpConnection::Socket socket) {
                           onAccept(ec, std::move(socket));
                         });
}

void BeastHttpServer::onAccept(const error_code& ec, HttpConnection::Socket socket) {
  if (!acceptor_.is_open() || context_->draining.load()) return;  // `socket` closes as it goes
  if (ec) {
    accept_retry_timer_.expires_after(kAcceptRetryDelay);
    accept_retry_timer_.async_wait([this](const error_code& wait_ec) {
      if (!wait_ec) accept();
    });
    return;
  }
  // server-sent events must leave at once, not wait for Nagle.
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto connection = std::make_shared<HttpConnection>(context_.get(), std::move(socket),
                                                     ssl_ != nullptr ? ssl_->current() : nullptr);
  if (context_->registry.add(connection, context_->options.max_connections)) {
    connection->start();
  } else {
    connection->reject();
  }
  accept();
}

int BeastHttpServer::numConnections() const { return context_->registry.size(); }

void BeastHttpServer::stopAccepting() {
  error_code ignored;
  if (threads_.empty()) {  // start() failed: nothing runs concurrently
    acceptor_.close(ignored);
    return;
  }
  // the acceptor belongs to its strand; close it there and wait, so no
  // connection is accepted once shutdown() has begun.
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  asio::post(acceptor_.get_executor(), [this, closed] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_timer_.cancel();
    closed->set_value();
  });
  done.wait_for(kForcedCloseWait);
}

void BeastHttpServer::stopIoThreads() {
  // after this no ResponseWriter reaches the io_context.
  context_->gate->close();
  work_.reset();
  io_context_.stop();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void BeastHttpServer::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  if (stopped_) return;
  auto deadline = std::chrono::steady_clock::now() + grace;
  context_->draining.store(true);
  stopAccepting();
  // idle connections close now; the others after their response, with
  // Connection: close.
  for (const auto& connection : context_->registry.snapshot()) connection->drain();
  if (!context_->registry.waitEmpty(deadline)) {
    for (const auto& connection : context_->registry.snapshot()) connection->forceClose();
    context_->registry.waitEmpty(std::chrono::steady_clock::now() + kForcedCloseWait);
  }
  stopIoThreads();
  // connections still queued in handlers die with the io_context; the
  // registry's references go now, while the io_context is still alive.
  context_->registry.clear();
  stopped_ = true;
}

}  // namespace tandem::http
