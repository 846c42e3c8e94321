#include "bench/loadgen/http_stream_client.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <limits>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/loadgen/openai_stream.h"
#include "bench/loadgen/sse_parser.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// a TCP connection and the bytes read past the last response.
struct Connection {
  explicit Connection(net::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

// an error body's message: OpenAI's {"error": {"message": ...}} or the text.
std::string errorMessage(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return body.substr(0, 300);
}

}  // namespace

class Exchange;

class HttpStreamClient::Impl {
 public:
  Impl(HttpEndpoint endpoint, tcp::resolver::results_type addresses, const HttpClientOptions& options)
      : endpoint_(std::move(endpoint)), addresses_(std::move(addresses)), options_(options),
        work_(net::make_work_guard(ioc_)) {
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void start(StreamRequest req, std::function<void(StreamResult)> done);
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
  HttpEndpoint endpoint_;
  tcp::resolver::results_type addresses_;
  HttpClientOptions options_;
  std::atomic<int> opened_{0};
  bool stopping_ = false;
  std::unordered_set<Exchange*> active_;
  std::vector<std::unique_ptr<Connection>> idle_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::thread thread_;
  std::atomic<bool> shut_{false};
};

// One request's life on the I/O thread: connect (or reuse), write, read the
// head, then read body bytes and hand them to the SSE parser with the time
// they were read.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(HttpStreamClient::Impl* client, StreamRequest req, std::function<void(StreamResult)> done)
      : client_(client), api_(req.api), reader_(req.api), done_(std::move(done)) {
    request_.method(http::verb::post);
    request_.target(client_->endpoint_.base_path + openAiPath(req.api));
    request_.version(11);
    request_.set(http::field::host, client_->endpoint_.host);
    request_.set(http::field::user_agent, "tandem-bench");
    request_.set(http::field::content_type, "application/json");
    request_.set(http::field::accept, "text/event-stream");
    if (!client_->options_.api_key.empty()) {
      request_.set(http::field::authorization, "Bearer " + client_->options_.api_key);
    }
    request_.keep_alive(true);
    request_.body() = openAiBody(req);
    request_.prepare_payload();
  }

  void run() {
    if (client_->stopping_) return fail("cancelled", "the client is shutting down");
    client_->active_.insert(this);
    self_ = shared_from_this();
    result_.start = Clock::now();
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
    http::async_write(conn_->stream, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
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
    http::async_read_header(conn_->stream, conn_->buffer, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->retryOrFail(ec, "read");
                              self->status_ = self->parser_->get().result_int();
                              self->readBody();
                            });
  }

  void readBody() {
    if (parser_->is_done()) return complete();
    auto& body = parser_->get().body();
    body.data = buf_;
    body.size = sizeof(buf_);
    http::async_read_some(conn_->stream, conn_->buffer, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->onBody(ec); });
  }

  void onBody(beast::error_code ec) {
    // the time the bytes arrived, before anything parses them.
    Clock::time_point now = Clock::now();
    if (ec == http::error::need_buffer) ec = {};
    size_t got = sizeof(buf_) - parser_->get().body().size;
    if (got > 0) consume(std::string_view(buf_, got), now);
    if (ec == http::error::end_of_stream || ec == net::error::eof) {
      // a close-delimited body ends with the connection.
      if (parser_->is_done() || !parser_->chunked()) return complete();
    }
    if (ec) return failIo(ec, "read");
    readBody();
  }

  void consume(std::string_view bytes, Clock::time_point t) {
    if (status_ != 200) {
      if (error_body_.size() < 4096) error_body_.append(bytes.substr(0, 4096 - error_body_.size()));
      return;
    }
    sse_.feed(bytes, [&](std::string_view data) { reader_.onData(data, t, &result_); });
  }

  void complete() {
    result_.end = Clock::now();
    if (status_ != 200) {
      return fail(absl::StrCat("http_", status_), errorMessage(error_body_));
    }
    sse_.finish([&](std::string_view data) { reader_.onData(data, result_.end, &result_); });
    if (result_.error_kind.empty() && result_.token_times.empty()) {
      result_.error_kind = "no_output";
      result_.error_message = "the stream carried no output text";
    }
    bool keep = parser_->keep_alive() && result_.error_kind.empty();
    if (keep) client_->release(std::move(conn_));
    result_.ok = result_.error_kind.empty();
    deliver();
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
    if (client_->stopping_ || ec == net::error::operation_aborted) return fail("cancelled", ec.message());
    if (ec == beast::error::timeout) return fail("timeout", absl::StrCat(where, " timed out"));
    fail(std::string(where) == "connect" ? "connect" : "read", absl::StrCat(where, ": ", ec.message()));
  }

  void fail(std::string kind, std::string message) {
    if (result_.end == Clock::time_point()) result_.end = Clock::now();
    if (result_.start == Clock::time_point()) result_.start = result_.end;
    result_.ok = false;
    result_.error_kind = std::move(kind);
    result_.error_message = std::move(message);
    if (conn_) {
      beast::error_code ignored;
      conn_->stream.socket().close(ignored);
      conn_.reset();
    }
    deliver();
  }

  void deliver() {
    client_->finished(this);
    auto done = std::move(done_);
    done(std::move(result_));
    self_.reset();  // may destroy this
  }

  HttpStreamClient::Impl* client_;
  Api api_;
  std::shared_ptr<Exchange> self_;  // alive while in flight
  std::unique_ptr<Connection> conn_;
  bool reused_ = false;
  int status_ = 0;
  http::request<http::string_body> request_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  char buf_[16 * 1024];
  SseParser sse_;
  OpenAiStreamReader reader_;
  StreamResult result_;
  std::string error_body_;
  std::function<void(StreamResult)> done_;
};

void HttpStreamClient::Impl::start(StreamRequest req, std::function<void(StreamResult)> done) {
  auto x = std::make_shared<Exchange>(this, std::move(req), std::move(done));
  net::post(ioc_, [x] { x->run(); });
}

void HttpStreamClient::Impl::shutdown() {
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

absl::StatusOr<std::unique_ptr<HttpStreamClient>> HttpStreamClient::create(const std::string& url,
                                                                           const HttpClientOptions& options) {
  absl::StatusOr<HttpEndpoint> ep = parseHttpUrl(url);
  if (!ep.ok()) return ep.status();
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto addresses = resolver.resolve(ep->host, ep->port, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot resolve ", ep->host, ": ", ec.message()));
  auto impl = std::make_unique<Impl>(*ep, std::move(addresses), options);
  return std::unique_ptr<HttpStreamClient>(new HttpStreamClient(std::move(impl)));
}

HttpStreamClient::HttpStreamClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpStreamClient::~HttpStreamClient() { shutdown(); }

void HttpStreamClient::start(StreamRequest req, std::function<void(StreamResult)> done) {
  if (impl_->shut_) {
    StreamResult r;
    r.start = r.end = Clock::now();
    r.error_kind = "cancelled";
    r.error_message = "the client is shut down";
    done(std::move(r));
    return;
  }
  impl_->start(std::move(req), std::move(done));
}

void HttpStreamClient::shutdown() { impl_->shutdown(); }
int HttpStreamClient::connectionsOpened() const { return impl_->opened_; }

int HttpStreamClient::warmUp(int n, std::chrono::milliseconds timeout) {
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

}  // namespace tandem::bench
