#include "tests/bench/fake_openai_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/http/http_server.h"
#include "nlohmann/json.hpp"

namespace tandem::bench::testing {

namespace net = boost::asio;
using nlohmann::json;

class FakeOpenAiServer::Impl {
 public:
  explicit Impl(const FakeServerOptions& options)
      : options_(options), work_(net::make_work_guard(timers_)) {
    timer_thread_ = std::thread([this] { timers_.run(); });
  }
  ~Impl() {
    if (server_) server_->shutdown(std::chrono::milliseconds(500));
    work_.reset();
    timers_.stop();
    timer_thread_.join();
  }

  void handle(http::HttpRequest req, http::ResponseWriterPtr writer) {
    auto arrived = std::chrono::steady_clock::now();
    if (req.method == "GET" && req.path == "/v1/models") {
      writer->respond(200, {{"Content-Type", "application/json"}},
                      R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})");
      return;
    }
    if (req.method == "GET" && req.path == "/metrics") {
      writer->respond(200, {{"Content-Type", "text/plain"}},
                      absl::StrCat("# TYPE fake_requests_total counter\nfake_requests_total ", served_.load(), "\n"));
      return;
    }
    bool chat = req.path == "/v1/chat/completions";
    if (req.method != "POST" || (!chat && req.path != "/v1/completions")) {
      writer->respond(404, {{"Content-Type", "application/json"}}, R"({"error":{"message":"not found"}})");
      return;
    }
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      writer->respond(400, {{"Content-Type", "application/json"}}, R"({"error":{"message":"bad json"}})");
      return;
    }
    std::string model = body.value("model", "");
    if (model == "fail-503") {
      writer->respond(503, {{"Content-Type", "application/json"}},
                      R"({"error":{"message":"overloaded","type":"server_error"}})");
      return;
    }
    int max_tokens = body.value("max_tokens", 16);
    int prompt_tokens = body.contains("prompt") && body["prompt"].is_array() ? static_cast<int>(body["prompt"].size()) : 1;
    auto stream = std::make_shared<Stream>(Stream{writer, chat, model == "fail-midstream", max_tokens, prompt_tokens,
                                                  arrived, net::steady_timer(timers_)});
    writer->startStream(200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
    net::post(timers_, [this, stream] { schedule(stream, 0); });
  }

  std::unique_ptr<http::HttpServer> server_;
  std::atomic<int> served_{0};

 private:
  struct Stream {
    http::ResponseWriterPtr writer;
    bool chat;
    bool fail_midstream;
    int max_tokens;
    int prompt_tokens;
    std::chrono::steady_clock::time_point arrived;
    net::steady_timer timer;
  };

  std::string chunk(const Stream& s, int k) const {
    json c = s.chat ? json{{"object", "chat.completion.chunk"},
                           {"choices", {{{"index", 0}, {"delta", {{"content", absl::StrCat(" t", k)}}}, {"finish_reason", nullptr}}}}}
                    : json{{"object", "text_completion"},
                           {"choices", {{{"index", 0}, {"text", absl::StrCat(" t", k)}, {"finish_reason", nullptr}}}}};
    return absl::StrCat("data: ", c.dump(), "\n\n");
  }

  void schedule(std::shared_ptr<Stream> s, int k) {
    // absolute deadlines: a late wake-up does not push later tokens back.
    s->timer.expires_at(s->arrived + options_.first_token_delay + k * options_.token_interval);
    s->timer.async_wait([this, s, k](const boost::system::error_code& ec) {
      if (ec || s->writer->closed()) return;
      std::string out = chunk(*s, k);
      if (s->fail_midstream) {
        out += "data: {\"error\":{\"message\":\"worker died\",\"type\":\"server_error\"}}\n\n";
        s->writer->write(std::move(out));
        s->writer->finish();
        return;
      }
      if (k + 1 < s->max_tokens) {
        s->writer->write(std::move(out));
        return schedule(s, k + 1);
      }
      // the last token, usage and [DONE] leave together: the end is the
      // last token's time.
      json usage = {{"choices", json::array()},
                    {"usage", {{"prompt_tokens", s->prompt_tokens},
                               {"completion_tokens", s->max_tokens},
                               {"total_tokens", s->prompt_tokens + s->max_tokens},
                               {"prompt_tokens_details", {{"cached_tokens", options_.cached_tokens}}}}}};
      out += absl::StrCat("data: ", usage.dump(), "\n\ndata: [DONE]\n\n");
      // counted before the bytes leave: a client that read them may ask
      // /metrics before this thread would get past finish().
      ++served_;
      s->writer->write(std::move(out));
      s->writer->finish();
    });
  }

  FakeServerOptions options_;
  net::io_context timers_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::thread timer_thread_;
};

absl::StatusOr<std::unique_ptr<FakeOpenAiServer>> FakeOpenAiServer::start(const FakeServerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  http::HttpServerOptions so;
  so.num_threads = options.io_threads;
  so.max_connections = 8192;
  Impl* raw = impl.get();
  auto server = http::HttpServer::start(so, [raw](http::HttpRequest req, http::ResponseWriterPtr w) {
    raw->handle(std::move(req), std::move(w));
  });
  if (!server.ok()) return server.status();
  impl->server_ = std::move(*server);
  return std::unique_ptr<FakeOpenAiServer>(new FakeOpenAiServer(std::move(impl)));
}

FakeOpenAiServer::FakeOpenAiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeOpenAiServer::~FakeOpenAiServer() = default;

std::string FakeOpenAiServer::url() const { return absl::StrCat("http://127.0.0.1:", impl_->server_->port()); }
int FakeOpenAiServer::requestsServed() const { return impl_->served_; }
int FakeOpenAiServer::connectionsNow() const { return impl_->server_->numConnections(); }

}  // namespace tandem::bench::testing
