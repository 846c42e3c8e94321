#include "tests/router/cluster/fake_worker.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "proto/convert/worker_enum_names.h"

namespace tandem::router::cluster::testing {

namespace {

// a server-streaming call whose handler blocks: it runs on a detached thread
// of its own, writes one message at a time (waiting for each) and ends the
// call with its status; OnDone frees the reactor once gRPC is done with it.
template <typename Response>
class ThreadedWriteReactor final : public grpc::ServerWriteReactor<Response>, public BlockingWriter<Response> {
 public:
  using Handler = std::function<grpc::Status(BlockingWriter<Response>*)>;

  ThreadedWriteReactor(HandlerThreads* threads, Handler handler) {
    threads->enter();
    std::thread([this, threads, handler = std::move(handler)] {
      const grpc::Status status = handler(this);
      // nothing of this object is touched after Finish (OnDone may free it).
      this->Finish(status);
      threads->leave();
    }).detach();
  }

  bool Write(const Response& message) override {
    std::unique_lock lock(mu_);
    if (over_) return false;
    writing_ = true;
    this->StartWrite(&message);
    cv_.wait(lock, [this] { return !writing_; });
    return !over_;
  }

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (!ok) over_ = true;
    cv_.notify_all();
  }
  void OnCancel() override {
    std::lock_guard lock(mu_);
    over_ = true;
    cv_.notify_all();
  }
  void OnDone() override { delete this; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool over_ = false;
};

grpc::ServerUnaryReactor* finished(grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

void HandlerThreads::enter() {
  std::lock_guard lock(mu_);
  ++running_;
}

void HandlerThreads::leave() {
  std::lock_guard lock(mu_);
  if (--running_ == 0) cv_.notify_all();
}

void HandlerThreads::waitIdle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return running_ == 0; });
}

FakeWorker::FakeWorker(FakeWorkerConfig config) : config_(std::move(config)) {
  stats_.set_num_blocks(config_.num_blocks);
  stats_.set_num_free_blocks(config_.num_blocks);
}

FakeWorker::~FakeWorker() { shutdown(); }

void FakeWorker::start() {
  stopping_ = false;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port_), config_.auth->serverCredentials(),
                           &port_);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
}

void FakeWorker::shutdown() {
  if (server_ == nullptr) return;
  stopping_ = true;
  events_cv_.notify_all();
  holdStats(false);
  releaseStats();
  // the handlers see stopping_ and end their calls within a slice (5-20
  // ms); the deadline only bounds a call that does not.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  handler_threads_.waitIdle();
  server_.reset();
}

tandem::v1::WorkerInfo FakeWorker::info() const {
  std::lock_guard lock(mu_);
  tandem::v1::WorkerInfo info;
  info.set_worker_id(config_.worker_id);
  info.set_address(address());
  info.set_role(*rpc::parseWorkerRole(config_.role));
  info.set_model_path("/models/fake");
  info.set_model_name(config_.model_name);
  info.set_max_model_len(config_.max_model_len);
  info.set_vocab_size(config_.vocab_size);
  info.set_block_size(config_.block_size);
  info.set_num_blocks(config_.num_blocks);
  info.set_lower_tier_blocks(config_.lower_tier_blocks);
  return info;
}

void FakeWorker::setStats(int running, int waiting, int free_blocks, int64_t prefill_queued) {
  std::lock_guard lock(mu_);
  stats_.set_num_running(running);
  stats_.set_num_waiting(waiting);
  stats_.set_num_free_blocks(free_blocks);
  stats_.set_num_prefill_tokens_queued(prefill_queued);
}

void FakeWorker::restartAs(const std::string& worker_id) {
  {
    std::lock_guard lock(mu_);
    config_.worker_id = worker_id;
    events_.clear();
    blocks_.clear();
    last_event_id_ = 0;
  }
  events_cv_.notify_all();
}

void FakeWorker::storeBlock(uint64_t hash, uint64_t parent, int skip) {
  {
    std::lock_guard lock(mu_);
    last_event_id_ += skip + 1;
    tandem::v1::KvEvent event;
    event.set_event_id(last_event_id_);
    event.mutable_stored()->set_hash(hash);
    event.mutable_stored()->set_parent_hash(parent);
    blocks_[hash] = event.stored();
    events_.push_back(event);
  }
  events_cv_.notify_all();
}

void FakeWorker::removeBlock(uint64_t hash) {
  {
    std::lock_guard lock(mu_);
    tandem::v1::KvEvent event;
    event.set_event_id(++last_event_id_);
    event.mutable_removed()->set_hash(hash);
    blocks_.erase(hash);
    events_.push_back(event);
  }
  events_cv_.notify_all();
}

std::vector<tandem::v1::WorkerGenerateRequest> FakeWorker::generateRequests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse>* FakeWorker::Generate(
    grpc::CallbackServerContext* context, const tandem::v1::WorkerGenerateRequest* request) {
  return new ThreadedWriteReactor<tandem::v1::WorkerGenerateResponse>(
      &handler_threads_,
      [this, context, request](BlockingWriter<tandem::v1::WorkerGenerateResponse>* writer) {
        return generate(context, request, writer);
      });
}

grpc::Status FakeWorker::generate(grpc::ServerContextBase* context,
                                  const tandem::v1::WorkerGenerateRequest* request,
                                  BlockingWriter<tandem::v1::WorkerGenerateResponse>* writer) {
  {
    std::lock_guard lock(mu_);
    requests_.push_back(*request);
  }
  const int prompt_len = request->token_ids_size();
  const int n = request->params().max_tokens();
  // prompt scores first, as the real worker sends them: prompt token i
  // scores -i/2, in parts of scores_per_message.
  if (request->params().has_prompt_logprobs()) {
    for (int start = 1; start < prompt_len; start += scores_per_message) {
      tandem::v1::WorkerGenerateResponse part;
      part.set_token(-1);
      for (int i = start; i < std::min(prompt_len, start + scores_per_message.load()); ++i) {
        tandem::v1::PromptLogprob* score = part.add_prompt_logprobs();
        score->set_token_id(request->token_ids(i));
        score->set_logprob(-0.5f * static_cast<float>(i));
        score->set_rank(1);
      }
      if (!writer->Write(part)) return grpc::Status::CANCELLED;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (context->IsCancelled() || stopping_) {
      ++cancelled_generates_;
      return grpc::Status::CANCELLED;
    }
    if (die_after >= 0 && i == die_after) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "died");
    tandem::v1::WorkerGenerateResponse msg;
    msg.set_token(fakeToken(prompt_len + i));
    msg.set_num_prompt_tokens(prompt_len);
    msg.set_num_output_tokens(i + 1);
    if (i == 0) {
      msg.set_prefill(request->prefill_address().empty() ? tandem::v1::PREFILL_KIND_LOCAL
                                                         : tandem::v1::PREFILL_KIND_REMOTE);
    }
    if (i == n - 1) msg.set_finish_reason(tandem::v1::FINISH_REASON_LENGTH);
    if (!writer->Write(msg)) {
      ++cancelled_generates_;
      return grpc::Status::CANCELLED;
    }
    // sleep in slices so a cancel is seen soon.
    for (int t = 0; t < token_delay_ms && !context->IsCancelled(); t += 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* FakeWorker::Prefill(grpc::CallbackServerContext* context,
                                              const tandem::v1::PrefillRequest*, tandem::v1::PrefillResponse*) {
  return finished(context, grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "fake"));
}

grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* FakeWorker::KvEvents(
    grpc::CallbackServerContext* context, const tandem::v1::KvEventsRequest* request) {
  return new ThreadedWriteReactor<tandem::v1::KvEventBatch>(
      &handler_threads_,
      [this, context, request](BlockingWriter<tandem::v1::KvEventBatch>* writer) {
        return kvEvents(context, request, writer);
      });
}

grpc::Status FakeWorker::kvEvents(grpc::ServerContextBase* context, const tandem::v1::KvEventsRequest* request,
                                  BlockingWriter<tandem::v1::KvEventBatch>* writer) {
  if (out_of_range_once.exchange(false) || out_of_range_always) {
    return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "events forgotten");
  }
  uint64_t cursor = request->after_event_id();
  std::string worker_id;
  std::unique_lock lock(mu_);
  // as the real worker's event log: an id never issued comes from an
  // earlier incarnation (a restart between the caller's snapshot and this
  // call), so the caller must resync.
  if (cursor > last_event_id_) {
    return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, "event id never issued");
  }
  while (!context->IsCancelled() && !stopping_) {
    if (config_.worker_id != worker_id) {
      // a new incarnation numbers its events from 1 again.
      if (!worker_id.empty()) cursor = 0;
      worker_id = config_.worker_id;
    }
    tandem::v1::KvEventBatch batch;
    batch.set_worker_id(worker_id);
    for (const tandem::v1::KvEvent& e : events_) {
      if (e.event_id() > cursor) *batch.add_events() = e;
    }
    if (batch.events_size() > 0) {
      cursor = batch.events(batch.events_size() - 1).event_id();
      lock.unlock();
      if (!writer->Write(batch)) return grpc::Status::CANCELLED;
      lock.lock();
      continue;
    }
    events_cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  return grpc::Status::CANCELLED;
}

grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* FakeWorker::KvSnapshot(
    grpc::CallbackServerContext*, const tandem::v1::KvSnapshotRequest*) {
  return new ThreadedWriteReactor<tandem::v1::KvSnapshotResponse>(
      &handler_threads_,
      [this](BlockingWriter<tandem::v1::KvSnapshotResponse>* writer) { return kvSnapshot(writer); });
}

grpc::Status FakeWorker::kvSnapshot(BlockingWriter<tandem::v1::KvSnapshotResponse>* writer) {
  ++snapshot_calls_;
  std::vector<tandem::v1::KvSnapshotResponse> parts;
  {
    std::lock_guard lock(mu_);
    snapshot_times_.push_back(std::chrono::steady_clock::now());
    constexpr int kPerPart = 16384;
    for (const auto& [hash, block] : blocks_) {
      if (parts.empty() || parts.back().blocks_size() == kPerPart) {
        parts.emplace_back();
        parts.back().set_worker_id(config_.worker_id);
        parts.back().set_last_event_id(last_event_id_);
      }
      *parts.back().add_blocks() = block;
    }
    if (parts.empty()) {
      parts.emplace_back();
      parts.back().set_worker_id(config_.worker_id);
      parts.back().set_last_event_id(last_event_id_);
    }
    parts.front().set_num_blocks(blocks_.size());
  }
  for (const tandem::v1::KvSnapshotResponse& part : parts) {
    if (!writer->Write(part)) return grpc::Status::CANCELLED;
  }
  return grpc::Status::OK;
}

std::vector<std::chrono::steady_clock::time_point> FakeWorker::snapshotTimes() const {
  std::lock_guard lock(mu_);
  return snapshot_times_;
}

grpc::ServerUnaryReactor* FakeWorker::Stats(grpc::CallbackServerContext* context, const tandem::v1::StatsRequest*,
                                            tandem::v1::WorkerStats* response) {
  grpc::Status status = stats(context, response);
  std::lock_guard lock(mu_);
  if (!status.ok() || !hold_stats_) return finished(context, status);
  held_stats_.push_back(context->DefaultReactor());
  return held_stats_.back();
}

void FakeWorker::holdStats(bool hold) {
  std::lock_guard lock(mu_);
  hold_stats_ = hold;
}

void FakeWorker::releaseStats() {
  std::vector<grpc::ServerUnaryReactor*> held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_stats_);
  }
  for (grpc::ServerUnaryReactor* reactor : held) reactor->Finish(grpc::Status::OK);
}

int FakeWorker::heldStats() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(held_stats_.size());
}

grpc::Status FakeWorker::stats(grpc::ServerContextBase* context, tandem::v1::WorkerStats* response) {
  if (grpc::Status s = config_.auth->check(*context); !s.ok()) return s;
  if (fail_stats) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted failure");
  std::lock_guard lock(mu_);
  *response = stats_;
  response->set_draining(draining.load());
  response->set_worker_id(config_.worker_id);
  response->set_last_event_id(last_event_id_);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* FakeWorker::Info(grpc::CallbackServerContext* context, const tandem::v1::InfoRequest*,
                                           tandem::v1::WorkerInfo* response) {
  if (grpc::Status s = config_.auth->check(*context); !s.ok()) return finished(context, s);
  *response = info();
  return finished(context, grpc::Status::OK);
}

}  // namespace tandem::router::cluster::testing
