#include "bench/loadgen/http_stream_client.h"

#include "absl/strings/str_cat.h"
#include "bench/loadgen/openai_stream.h"
#include "bench/loadgen/sse_parser.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {
namespace {

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

const char* failureKind(http::AsyncHttpFailure::Kind kind) {
  switch (kind) {
    case http::AsyncHttpFailure::kConnect: return "connect";
    case http::AsyncHttpFailure::kRead: return "read";
    case http::AsyncHttpFailure::kTimeout: return "timeout";
    case http::AsyncHttpFailure::kCancelled: return "cancelled";
  }
  return "read";
}

// One request's answer: the SSE events of a 200 into its StreamResult, each
// output with the time its bytes were read; any other status into an
// "http_<status>" error with the server's message.
class OpenAiExchange final : public http::AsyncHttpHandler {
 public:
  OpenAiExchange(Api api, std::function<void(StreamResult)> done) : reader_(api), done_(std::move(done)) {}

  // http::AsyncHttpHandler
  void onStart(Clock::time_point now) override { result_.start = now; }
  void onHead(int status) override { status_ = status; }
  void onBody(std::string_view bytes, Clock::time_point read_at) override {
    if (status_ != 200) {
      if (error_body_.size() < 4096) error_body_.append(bytes.substr(0, 4096 - error_body_.size()));
      return;
    }
    sse_.feed(bytes, [&](std::string_view data) { reader_.onData(data, read_at, &result_); });
  }
  bool onComplete() override {
    result_.end = Clock::now();
    if (status_ != 200) {
      fail(absl::StrCat("http_", status_), errorMessage(error_body_));
      return false;
    }
    sse_.finish([&](std::string_view data) { reader_.onData(data, result_.end, &result_); });
    if (result_.error_kind.empty() && result_.token_times.empty()) {
      result_.error_kind = "no_output";
      result_.error_message = "the stream carried no output text";
    }
    result_.ok = result_.error_kind.empty();
    const bool keep = result_.ok;
    deliver();
    return keep;
  }
  void onFailure(http::AsyncHttpFailure failure) override {
    fail(failureKind(failure.kind), std::move(failure.message));
  }

 private:
  void fail(std::string kind, std::string message) {
    if (result_.end == Clock::time_point()) result_.end = Clock::now();
    if (result_.start == Clock::time_point()) result_.start = result_.end;
    result_.ok = false;
    result_.error_kind = std::move(kind);
    result_.error_message = std::move(message);
    deliver();
  }
  void deliver() {
    auto done = std::move(done_);
    done(std::move(result_));
  }

  int status_ = 0;
  SseParser sse_;
  OpenAiStreamReader reader_;
  StreamResult result_;
  std::string error_body_;
  std::function<void(StreamResult)> done_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpStreamClient>> HttpStreamClient::create(const std::string& url,
                                                                           const HttpClientOptions& options) {
  absl::StatusOr<HttpEndpoint> endpoint = parseHttpUrl(url);
  if (!endpoint.ok()) return endpoint.status();
  absl::StatusOr<std::unique_ptr<http::AsyncHttpClient>> client = http::AsyncHttpClient::create(
      endpoint->host, endpoint->port,
      {.request_timeout = options.request_timeout, .user_agent = "tandem-bench"});
  if (!client.ok()) return client.status();
  return std::unique_ptr<HttpStreamClient>(new HttpStreamClient(*endpoint, options, *std::move(client)));
}

HttpStreamClient::HttpStreamClient(HttpEndpoint endpoint, HttpClientOptions options,
                                   std::unique_ptr<http::AsyncHttpClient> client)
    : endpoint_(std::move(endpoint)), options_(std::move(options)), client_(std::move(client)) {}

HttpStreamClient::~HttpStreamClient() { shutdown(); }

void HttpStreamClient::start(StreamRequest req, std::function<void(StreamResult)> done) {
  http::AsyncHttpRequest request{.target = endpoint_.base_path + openAiPath(req.api),
                                 .headers = {{"Content-Type", "application/json"},
                                             {"Accept", "text/event-stream"}},
                                 .body = openAiBody(req)};
  if (!options_.api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
  client_->start(std::move(request), std::make_shared<OpenAiExchange>(req.api, std::move(done)));
}

void HttpStreamClient::shutdown() { client_->shutdown(); }
int HttpStreamClient::warmUp(int n, std::chrono::milliseconds timeout) { return client_->warmUp(n, timeout); }
int HttpStreamClient::connectionsOpened() const { return client_->connectionsOpened(); }

}  // namespace tandem::bench
