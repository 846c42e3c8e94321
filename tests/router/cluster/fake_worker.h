// A scripted tandem.v1.Worker on a real gRPC server on loopback, for the
// router's cluster tests. Generate answers token 1000 + p for each position
// p of the sequence (so a request migrated with prompt ‖ generated tokens
// continues the same sequence), and can die after k tokens; Stats, Info,
// KvSnapshot and KvEvents answer what the test sets.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/grpc/cluster_auth.h"
#include "grpcpp/grpcpp.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster::testing {

// the token a fake worker generates at sequence position `position`.
inline int32_t fakeToken(int position) { return 1000 + position; }

struct FakeWorkerConfig {
  std::string worker_id = "w1";
  std::string role = "decode";
  int max_model_len = 512;
  int vocab_size = 32000;
  int block_size = 4;
  int num_blocks = 1000;
  int64_t lower_tier_blocks = 0;  // G2 + G3 capacity it reports
  std::string model_name = "fake";
  // what Stats and Info require of their callers (as a real worker's API
  // does), and how the listener listens (mutual TLS when it has TLS).
  grpc_util::ClusterAuthPtr auth = grpc_util::ClusterAuth::none();
};

// a server-streaming call's writer for the fake's blocking handlers: they
// run on a thread of their own (FakeWorker serves the callback API: gRPC
// 1.51's sync server can free a completion queue twice while it shuts down,
// seen as aborts in these tests).
template <typename Response>
class BlockingWriter {
 public:
  virtual ~BlockingWriter() = default;
  // writes `message` and waits for it to go out; false when the call is over.
  virtual bool Write(const Response& message) = 0;
};

// the handler threads of a fake's streaming calls still running: a call's
// Finish() may still be inside gRPC after the server's Wait() returned, so
// the server is destroyed only once they are all out.
class HandlerThreads {
 public:
  void enter();
  void leave();
  void waitIdle();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
};

class FakeWorker final : public tandem::v1::Worker::CallbackService {
 public:
  explicit FakeWorker(FakeWorkerConfig config);
  ~FakeWorker() override;

  // listens on 127.0.0.1 (a free port; the same one again after shutdown()).
  void start();
  // stops serving now: calls in progress are cancelled.
  void shutdown();
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  tandem::v1::WorkerInfo info() const;

  // scripted behaviour
  void setStats(int running, int waiting, int free_blocks, int64_t prefill_queued = 0);
  std::atomic<bool> fail_stats{false};
  std::atomic<bool> draining{false};  // what Stats says of WorkerStats.draining
  std::atomic<int> die_after{-1};  // Generate fails (UNAVAILABLE) after this many tokens
  std::atomic<int> token_delay_ms{0};
  // with params.prompt_logprobs, Generate sends the prompt's scores (token
  // i: -i/2) before the first token, this many a message.
  std::atomic<int> scores_per_message{2};
  // the first KvEvents call answers OUT_OF_RANGE.
  std::atomic<bool> out_of_range_once{false};
  // every KvEvents call answers OUT_OF_RANGE (a worker that keeps forcing resyncs).
  std::atomic<bool> out_of_range_always{false};
  // while held, a Stats call takes its answer when it arrives but is only
  // answered by releaseStats() (an answer overtaken by a later poll's).
  void holdStats(bool hold);
  void releaseStats();
  int heldStats() const;
  // a new incarnation: new worker_id, KV state and event ids from 1.
  void restartAs(const std::string& worker_id);
  // appends events (ids assigned in order unless `skip` ids are left out first).
  void storeBlock(uint64_t hash, uint64_t parent, int skip = 0);
  void removeBlock(uint64_t hash);

  // what it saw
  std::vector<tandem::v1::WorkerGenerateRequest> generateRequests() const;
  int cancelledGenerates() const { return cancelled_generates_.load(); }
  int snapshotCalls() const { return snapshot_calls_.load(); }
  // when each KvSnapshot call arrived, in order.
  std::vector<std::chrono::steady_clock::time_point> snapshotTimes() const;

  // tandem::v1::Worker::CallbackService
  grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const tandem::v1::WorkerGenerateRequest* request) override;
  grpc::ServerUnaryReactor* Prefill(grpc::CallbackServerContext* context, const tandem::v1::PrefillRequest* request,
                                    tandem::v1::PrefillResponse* response) override;
  grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* KvEvents(grpc::CallbackServerContext* context,
                                                                const tandem::v1::KvEventsRequest* request) override;
  // streams the stored blocks in parts of 16384, as the real worker does.
  grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* KvSnapshot(
      grpc::CallbackServerContext* context, const tandem::v1::KvSnapshotRequest* request) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context, const tandem::v1::StatsRequest* request,
                                  tandem::v1::WorkerStats* response) override;
  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context, const tandem::v1::InfoRequest* request,
                                 tandem::v1::WorkerInfo* response) override;

 private:
  // the blocking bodies of the streaming calls (on the call's own thread).
  grpc::Status generate(grpc::ServerContextBase* context, const tandem::v1::WorkerGenerateRequest* request,
                        BlockingWriter<tandem::v1::WorkerGenerateResponse>* writer);
  grpc::Status kvEvents(grpc::ServerContextBase* context, const tandem::v1::KvEventsRequest* request,
                        BlockingWriter<tandem::v1::KvEventBatch>* writer);
  grpc::Status kvSnapshot(BlockingWriter<tandem::v1::KvSnapshotResponse>* writer);
  grpc::Status stats(grpc::ServerContextBase* context, tandem::v1::WorkerStats* response);

  FakeWorkerConfig config_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  HandlerThreads handler_threads_;

  mutable std::mutex mu_;
  std::condition_variable events_cv_;
  tandem::v1::WorkerStats stats_;                           // guarded by mu_
  std::vector<tandem::v1::KvEvent> events_;                 // guarded by mu_
  std::map<uint64_t, tandem::v1::KvBlockStored> blocks_;    // guarded by mu_
  uint64_t last_event_id_ = 0;                              // guarded by mu_
  std::vector<tandem::v1::WorkerGenerateRequest> requests_; // guarded by mu_
  std::vector<std::chrono::steady_clock::time_point> snapshot_times_;  // guarded by mu_
  bool hold_stats_ = false;                                 // guarded by mu_
  std::vector<grpc::ServerUnaryReactor*> held_stats_;       // guarded by mu_
  std::atomic<int> cancelled_generates_{0};
  std::atomic<int> snapshot_calls_{0};
};

// polls `done` every 10 ms until it holds or `timeout` passes; returns it.
template <typename F>
bool waitFor(F done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace tandem::router::cluster::testing
