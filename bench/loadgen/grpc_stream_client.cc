#include "bench/loadgen/grpc_stream_client.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::bench {

namespace {

const char* grpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    default: return "OTHER";
  }
}

v1::GenerateRequest toProto(const StreamRequest& req) {
  v1::GenerateRequest out;
  out.set_model(req.model);
  if (req.api == Api::kChat || (req.prompt_ids.empty() && !req.messages.empty())) {
    std::vector<std::string> parts;
    for (const ChatMessage& m : req.messages) parts.push_back(m.content);
    out.set_text(absl::StrJoin(parts, "\n"));
  } else if (!req.prompt_ids.empty()) {
    auto* ids = out.mutable_token_ids();
    for (int32_t id : req.prompt_ids) ids->add_ids(id);
  } else {
    out.set_text(req.prompt_text);
  }
  auto* p = out.mutable_params();
  p->set_max_tokens(req.max_tokens);
  p->set_ignore_eos(req.ignore_eos);
  if (req.temperature) p->set_temperature(static_cast<float>(*req.temperature));
  return out;
}

}  // namespace

class GrpcStreamClient::Impl {
 public:
  Impl(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub_(v1::Inference::NewStub(channel)), timeout_(timeout) {}

  // Reads one Generate stream; deletes itself after delivering.
  class Reactor : public grpc::ClientReadReactor<v1::GenerateResponse> {
   public:
    Reactor(Impl* client, const StreamRequest& req, std::function<void(StreamResult)> done)
        : client_(client), request_(toProto(req)), done_(std::move(done)) {
      context_.set_deadline(std::chrono::system_clock::now() + client->timeout_);
    }
    void begin() {
      result_.start = Clock::now();
      client_->stub_->async()->Generate(&context_, &request_, this);
      StartRead(&response_);
      StartCall();
    }
    void cancel() { context_.TryCancel(); }

    // grpc::ClientReadReactor
    void OnReadDone(bool ok) override {
      if (!ok) return;  // the stream ended; OnDone follows
      Clock::time_point now = Clock::now();
      if (response_.token_ids_size() > 0 || !response_.text().empty()) {
        result_.token_times.push_back(now);
        result_.text += response_.text();
        streamed_tokens_ += std::max(response_.token_ids_size(), 1);
      }
      if (!response_.finish_reason().empty()) result_.finish_reason = response_.finish_reason();
      if (response_.has_usage()) {
        result_.prompt_tokens = response_.usage().prompt_tokens();
        result_.completion_tokens = response_.usage().completion_tokens();
        result_.cached_tokens = response_.usage().cached_tokens();
      }
      StartRead(&response_);
    }
    void OnDone(const grpc::Status& status) override {
      result_.end = Clock::now();
      if (!status.ok()) {
        result_.error_kind = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                                 ? "timeout"
                                 : absl::StrCat("grpc_", grpcCodeName(status.error_code()));
        result_.error_message = status.error_message();
      } else if (result_.token_times.empty()) {
        result_.error_kind = "no_output";
        result_.error_message = "the stream carried no tokens";
      }
      if (result_.completion_tokens < 0 && streamed_tokens_ > 0) result_.completion_tokens = streamed_tokens_;
      result_.ok = result_.error_kind.empty();
      client_->finished(this);
      auto done = std::move(done_);
      done(std::move(result_));
      delete this;
    }

   private:
    Impl* client_;
    grpc::ClientContext context_;
    v1::GenerateRequest request_;
    v1::GenerateResponse response_;
    StreamResult result_;
    int streamed_tokens_ = 0;
    std::function<void(StreamResult)> done_;
  };

  void start(const StreamRequest& req, std::function<void(StreamResult)> done) {
    auto* r = new Reactor(this, req, std::move(done));
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      active_.insert(r);
    }
    r->begin();
  }
  void finished(Reactor* r) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    active_.erase(r);
    if (active_.empty()) idle_.notify_all();
  }
  void shutdown() {
    std::unique_lock<std::recursive_mutex> lock(mu_);
    shut_ = true;
    // a copy: gRPC may finish a cancelled call inline (recursive lock), and
    // each reactor is touched only once, before it can be deleted.
    std::vector<Reactor*> active(active_.begin(), active_.end());
    for (Reactor* r : active) r->cancel();
    idle_.wait(lock, [&] { return active_.empty(); });
  }
  bool shut() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return shut_;
  }

 private:
  std::unique_ptr<v1::Inference::Stub> stub_;
  std::chrono::milliseconds timeout_;
  std::recursive_mutex mu_;
  std::condition_variable_any idle_;
  std::unordered_set<Reactor*> active_;
  bool shut_ = false;
};

absl::StatusOr<std::unique_ptr<GrpcStreamClient>> GrpcStreamClient::create(
    const std::string& target, std::chrono::milliseconds request_timeout) {
  std::string t = target;
  for (const char* scheme : {"grpc://", "http://"}) {
    if (absl::StartsWith(t, scheme)) t = t.substr(std::string(scheme).size());
  }
  while (!t.empty() && t.back() == '/') t.pop_back();
  if (t.empty()) return absl::InvalidArgumentError("--url: no gRPC target");
  grpc::ChannelArguments args;
  // one HTTP/2 connection carries many streams; allow plenty of them.
  args.SetInt(GRPC_ARG_MAX_CONCURRENT_STREAMS, 1 << 20);
  auto channel = grpc::CreateCustomChannel(t, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<GrpcStreamClient>(
      new GrpcStreamClient(std::make_unique<Impl>(std::move(channel), request_timeout)));
}

GrpcStreamClient::GrpcStreamClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcStreamClient::~GrpcStreamClient() { shutdown(); }

void GrpcStreamClient::start(StreamRequest req, std::function<void(StreamResult)> done) {
  if (impl_->shut()) {
    StreamResult r;
    r.start = r.end = Clock::now();
    r.error_kind = "cancelled";
    done(std::move(r));
    return;
  }
  impl_->start(req, std::move(done));
}

void GrpcStreamClient::shutdown() { impl_->shutdown(); }

}  // namespace tandem::bench
