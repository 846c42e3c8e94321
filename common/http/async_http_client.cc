#include "common/http/async_http_client.h"

#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace tandem::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = AsyncHttpHandler::Clock;

namespace {

// a TCP connection and the bytes read past the last response.
struct Connection {
  explicit Connection(net::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

}  // namespace

class Exchange;

class AsyncHttpClient::Impl {
 public:
  Impl(std::string host, tcp::resolver::results_type addresses, AsyncHttpOptions options)
      : host_(std::move(host)), addresses_(std::move(addresses)), options_(std::move(options)),
        work_(net::make_work_guard(ioc_)) {
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void start(AsyncHttpRequest request, std::shared_ptr<AsyncHttpHandler> handler);
  void shutdown();

  // I/O thread only from here on.
  std::unique_ptr<Connection> takeIdle() {
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  std::unique_ptr<Connection> open() {
    ++opened_;
    return std::make_unique<Connection>(ioc_);
  }
  void release(std::unique_ptr<Connection> c) {
    if (stopping_) return;
    c->stream.expires_never();
    idle_.push_back(std::move(c));
  }
  void finished(Exchange* x) { active_.erase(x); }

  net::io_context ioc_;
  const std::string host_;
  const tcp::resolver::results_type addresses_;
  const AsyncHttpOptions options_;
  std::atomic<int> opened_{0};
  bool stopping_ = false;
  std::unordered_set<Exchange*> active_;
  std::vector<std::unique_ptr<Connection>> idle_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::thread thread_;
  std::atomic<bool> shut_{false};
};

// One request's life on the I/O thread: connect (or reuse), write, read the
// head, then read body bytes and hand them to the handler with the time
// they were read.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(AsyncHttpClient::Impl* client, AsyncHttpRequest request, std::shared_ptr<AsyncHttpHandler> handler)
      : client_(client), handler_(std::move(handler)) {
    request_.method(bhttp::verb::post);
    request_.target(request.target);
    request_.version(11);
    request_.set(bhttp::field::host, client_->host_);
    request_.set(bhttp::field::user_agent, client_->options_.user_agent);
    for (const auto& [name, value] : request.headers) request_.set(name, value);
    request_.keep_alive(true);
    request_.body() = std::move(request.body);
    request_.prepare_payload();
  }

  void run() {
    if (client_->stopping_) {
      return fail({AsyncHttpFailure::kCancelled, "the client is shutting down"});
    }
    client_->active_.insert(this);
    self_ = shared_from_this();
    handler_->onStart(Clock::now());
    conn_ = client_->takeIdle();
    if (conn_) {
      reused_ = true;
      return write();
    }
    connect();
  }

  void cancel() {
    beast::error_code ec;
    if (conn_) conn_->stream.socket().close(ec);
  }

 private:
  void connect() {
    reused_ = false;
    conn_ = client_->open();
    conn_->stream.expires_after(client_->options_.request_timeout);
    conn_->stream.async_connect(client_->addresses_,
                                [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                                  if (ec) return self->failIo(ec, "connect");
                                  self->write();
                                });
  }

  void write() {
    conn_->stream.expires_after(client_->options_.request_timeout);
    bhttp::async_write(conn_->stream, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->retryOrFail(ec, "write");
      self->readHeader();
    });
  }

  void readHeader() {
    parser_.emplace();
    // a streamed answer has no size limit. Not boost::none: Boost 1.74
    // compares a Content-Length against the optional, and none loses.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_->get().body().data = nullptr;
    parser_->get().body().size = 0;
    bhttp::async_read_header(conn_->stream, conn_->buffer, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               if (ec) return self->retryOrFail(ec, "read");
                               self->handler_->onHead(self->parser_->get().result_int());
                               self->readBody();
                             });
  }

  void readBody() {
    if (parser_->is_done()) return complete();
    auto& body = parser_->get().body();
    body.data = buf_;
    body.size = sizeof(buf_);
    bhttp::async_read_some(conn_->stream, conn_->buffer, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) { self->onBody(ec); });
  }

  void onBody(beast::error_code ec) {
    // the time the bytes arrived, before anything parses them.
    const Clock::time_point now = Clock::now();
    if (ec == bhttp::error::need_buffer) ec = {};
    const size_t got = sizeof(buf_) - parser_->get().body().size;
    if (got > 0) handler_->onBody(std::string_view(buf_, got), now);
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof) {
      // a close-delimited body ends with the connection.
      if (parser_->is_done() || !parser_->chunked()) return complete();
    }
    if (ec) return failIo(ec, "read");
    readBody();
  }

  void complete() {
    const bool keep = handler_->onComplete() && parser_->keep_alive();
    if (keep) client_->release(std::move(conn_));
    done();
  }

  // a reused keep-alive connection the server closed in the meantime fails
  // before any byte of the answer: send again on a fresh connection.
  void retryOrFail(beast::error_code ec, const char* where) {
    if (reused_ && !client_->stopping_ && ec != beast::error::timeout && ec != net::error::operation_aborted) {
      beast::error_code ignored;
      conn_->stream.socket().close(ignored);
      conn_->buffer.clear();
      return connect();
    }
    failIo(ec, where);
  }

  void failIo(beast::error_code ec, const char* where) {
    if (client_->stopping_ || ec == net::error::operation_aborted) {
      return fail({AsyncHttpFailure::kCancelled, ec.message()});
    }
    if (ec == beast::error::timeout) return fail({AsyncHttpFailure::kTimeout, absl::StrCat(where, " timed out")});
    fail({std::string_view(where) == "connect" ? AsyncHttpFailure::kConnect : AsyncHttpFailure::kRead,
          absl::StrCat(where, ": ", ec.message())});
  }

  void fail(AsyncHttpFailure failure) {
    if (conn_) {
      beast::error_code ignored;
      conn_->stream.socket().close(ignored);
      conn_.reset();
    }
    handler_->onFailure(std::move(failure));
    done();
  }

  void done() {
    client_->finished(this);
    handler_.reset();
    self_.reset();  // may destroy this
  }

  AsyncHttpClient::Impl* client_;
  std::shared_ptr<AsyncHttpHandler> handler_;
  std::shared_ptr<Exchange> self_;  // alive while in flight
  std::unique_ptr<Connection> conn_;
  bool reused_ = false;
  bhttp::request<bhttp::string_body> request_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  char buf_[16 * 1024];
};

void AsyncHttpClient::Impl::start(AsyncHttpRequest request, std::shared_ptr<AsyncHttpHandler> handler) {
  auto x = std::make_shared<Exchange>(this, std::move(request), std::move(handler));
  net::post(ioc_, [x] { x->run(); });
}

void AsyncHttpClient::Impl::shutdown() {
  if (shut_.exchange(true)) return;
  net::post(ioc_, [this] {
    stopping_ = true;
    // copy: cancel() completes handlers later, but be safe against erase.
    std::vector<Exchange*> active(active_.begin(), active_.end());
    for (Exchange* x : active) x->cancel();
    idle_.clear();
  });
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<AsyncHttpClient>> AsyncHttpClient::create(const std::string& host,
                                                                         const std::string& port,
                                                                         AsyncHttpOptions options) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto addresses = resolver.resolve(host, port, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", ec.message()));
  auto impl = std::make_unique<Impl>(host, std::move(addresses), std::move(options));
  return std::unique_ptr<AsyncHttpClient>(new AsyncHttpClient(std::move(impl)));
}

AsyncHttpClient::AsyncHttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AsyncHttpClient::~AsyncHttpClient() { shutdown(); }

void AsyncHttpClient::start(AsyncHttpRequest request, std::shared_ptr<AsyncHttpHandler> handler) {
  if (impl_->shut_) {
    handler->onFailure({AsyncHttpFailure::kCancelled, "the client is shut down"});
    return;
  }
  impl_->start(std::move(request), std::move(handler));
}

void AsyncHttpClient::shutdown() { impl_->shutdown(); }
int AsyncHttpClient::connectionsOpened() const { return impl_->opened_; }

int AsyncHttpClient::warmUp(int n, std::chrono::milliseconds timeout) {
  if (n <= 0 || impl_->shut_) return 0;
  struct Count {
    std::mutex mu;
    std::condition_variable cv;
    int pending, ok = 0;
  };
  auto count = std::make_shared<Count>();
  count->pending = n;
  Impl* impl = impl_.get();
  net::post(impl->ioc_, [impl, n, count, timeout] {
    for (int i = 0; i < n; ++i) {
      std::shared_ptr<Connection> c = impl->open();
      c->stream.expires_after(timeout);
      c->stream.async_connect(impl->addresses_, [impl, c, count](beast::error_code ec, const tcp::endpoint&) {
        if (!ec) {
          c->stream.expires_never();
          impl->idle_.push_back(std::make_unique<Connection>(std::move(*c)));
        }
        std::lock_guard<std::mutex> lock(count->mu);
        count->ok += ec ? 0 : 1;
        if (--count->pending == 0) count->cv.notify_all();
      });
    }
  });
  std::unique_lock<std::mutex> lock(count->mu);
  count->cv.wait_for(lock, timeout + std::chrono::seconds(1), [&] { return count->pending == 0; });
  return count->ok;
}

}  // namespace tandem::http
