// D against a prefill worker that never answers (a stub Worker service on
// loopback): D's --prefill-timeout bounds the wait and D prefills locally;
// a client that cancels its Generate call cancels the Prefill call on P and
// frees D's request; a D whose cache has no room for a prompt now prefills
// it locally (queued) instead of asking P.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "server/worker/worker.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

// answers Prefill only when the caller gives up, or when the test says
// (release(): UNAVAILABLE to every call waiting).
class StallingPrefillService final : public tandem::v1::Worker::CallbackService {
 public:
  class Reactor final : public grpc::ServerUnaryReactor {
   public:
    explicit Reactor(StallingPrefillService* service) : service_(service) {}
    void OnCancel() override {
      ++service_->cancelled;
      finishOnce(grpc::Status::CANCELLED);
    }
    void OnDone() override {
      service_->forget(this);
      delete this;
    }
    // the first of a cancel and a release answers; the other does nothing.
    void finishOnce(const grpc::Status& status) {
      if (!finished_.exchange(true)) Finish(status);
    }

   private:
    StallingPrefillService* service_;
    std::atomic<bool> finished_{false};
  };

  grpc::ServerUnaryReactor* Prefill(grpc::CallbackServerContext* ctx,
                                    const tandem::v1::PrefillRequest* request,
                                    tandem::v1::PrefillResponse* response) override {
    auto* reactor = new Reactor(this);
    {
      std::lock_guard lock(mu_);
      waiting_.insert(reactor);
    }
    ++received;
    return reactor;
  }

  void release() {
    std::lock_guard lock(mu_);
    for (Reactor* r : waiting_) r->finishOnce(grpc::Status(grpc::StatusCode::UNAVAILABLE, "released by the test"));
  }

  std::atomic<int> received{0};
  std::atomic<int> cancelled{0};

 private:
  void forget(Reactor* r) {
    std::lock_guard lock(mu_);
    waiting_.erase(r);
  }

  std::mutex mu_;
  std::set<Reactor*> waiting_;
};

class StalledPrefillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(port_, 0);
  }
  // num_blocks > 0: a KV cache of exactly that many blocks.
  void startDecodeWorker(std::chrono::milliseconds prefill_timeout, int num_blocks = 0) {
    WorkerOptions options = testing::smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, 4);
    options.prefill_timeout = prefill_timeout;
    // stories260K: 5 layers x K,V x 4 kv heads x 8 dims x F32 = 1280 bytes a token.
    if (num_blocks > 0) options.engine.kv_budget_bytes = static_cast<uint64_t>(num_blocks) * 4 * 1280;
    auto d = Worker::create(options);
    ASSERT_TRUE(d.ok()) << d.status();
    d_ = std::move(*d);
  }
  void TearDown() override {
    d_.reset();
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }

  bool waitFor(const std::function<bool()>& cond) {
    for (int i = 0; i < 2000; ++i) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  StallingPrefillService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  WorkerPtr d_;
};

TEST_F(StalledPrefillTest, TimeoutFallsBackToALocalPrefill) {
  startDecodeWorker(std::chrono::milliseconds(300));
  const auto& c = tandem::testing::storiesOracle()[2];
  const auto start = std::chrono::steady_clock::now();
  testing::GenerateResult r =
      testing::generate(d_->info().address(), c.prompt_ids,
                        static_cast<int>(c.completion_ids.size()), "127.0.0.1:" + std::to_string(port_));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_EQ(r.prefill, "remote_failed");
  EXPECT_EQ(r.tokens, c.completion_ids);
  EXPECT_EQ(service_.received.load(), 1);
  EXPECT_EQ(testing::metricValue(d_->metrics().render(),
                                 "tandem:kv_transfer_failures_total{reason=\"timeout\"}"),
            1);
}

TEST_F(StalledPrefillTest, CancelledGenerateCancelsThePrefillCall) {
  startDecodeWorker(std::chrono::milliseconds(20000));
  auto stub = tandem::v1::Worker::NewStub(
      grpc::CreateChannel(d_->info().address(), grpc::InsecureChannelCredentials()));
  tandem::v1::WorkerGenerateRequest request;
  const auto& c = tandem::testing::storiesOracle()[0];
  request.mutable_token_ids()->Assign(c.prompt_ids.begin(), c.prompt_ids.end());
  request.mutable_params()->set_temperature(0);
  request.mutable_params()->set_max_tokens(8);
  request.set_prefill_address("127.0.0.1:" + std::to_string(port_));
  grpc::ClientContext ctx;
  auto reader = stub->Generate(&ctx, request);
  ASSERT_TRUE(waitFor([&] { return service_.received.load() == 1; }));
  const auto cancelled_at = std::chrono::steady_clock::now();
  ctx.TryCancel();
  tandem::v1::WorkerGenerateResponse msg;
  EXPECT_FALSE(reader->Read(&msg));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // P saw its call cancelled long before D's 20 s prefill timeout...
  ASSERT_TRUE(waitFor([&] { return service_.cancelled.load() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(2));
  // ...and D dropped the transfer and freed the request's blocks.
  ASSERT_TRUE(waitFor([&] {
    const engine::EngineLoopStats s = d_->loop().stats();
    return s.num_free_blocks == s.num_blocks;
  }));
  EXPECT_EQ(testing::metricValue(d_->metrics().render(), "tandem:kv_transfer_failures_total{reason=\"timeout\"}"), 0);
}

// a request awaiting P's KV holds 18 of D's 20 blocks (P stalls until the
// test releases it, well inside D's prefill timeout); a remote-prefill
// request for 3 blocks then finds no room, so D queues it for a local
// prefill without calling P, and it completes with the oracle's tokens once
// the blocks come free. Released, not timed out: a 1 s timeout ran out
// before the checks under ASan on a loaded machine.
TEST_F(StalledPrefillTest, FullDecodeWorkerPrefillsLocallyInsteadOfWaitingForP) {
  startDecodeWorker(std::chrono::milliseconds(60000), /*num_blocks=*/20);
  ASSERT_EQ(d_->info().num_blocks(), 20);
  const std::string p_address = "127.0.0.1:" + std::to_string(port_);
  std::vector<int32_t> filler(72);  // 18 blocks of 4
  for (int i = 0; i < 72; ++i) filler[i] = 300 + i;
  testing::GenerateResult filler_result;
  std::thread filler_thread(
      [&] { filler_result = testing::generate(d_->info().address(), filler, 4, p_address); });
  ASSERT_TRUE(waitFor([&] { return service_.received.load() == 1; }));
  EXPECT_EQ(d_->loop().stats().num_free_blocks, 2);
  EXPECT_EQ(d_->loop().stats().num_waiting, 0);  // the filler awaits its KV, it does not wait here

  const auto& c = tandem::testing::storiesOracle()[1];  // 12 prompt tokens: 3 blocks
  testing::GenerateResult r;
  std::thread second([&] {
    r = testing::generate(d_->info().address(), c.prompt_ids, static_cast<int>(c.completion_ids.size()), p_address);
  });
  // queued here for its blocks, P not asked: then P gives up on the filler.
  EXPECT_TRUE(waitFor([&] { return d_->loop().stats().num_waiting >= 1; }));
  EXPECT_EQ(service_.received.load(), 1);
  service_.release();
  second.join();
  filler_thread.join();
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.prefill, "local");
  EXPECT_EQ(r.tokens, c.completion_ids);
  ASSERT_TRUE(filler_result.status.ok()) << filler_result.status.error_message();
  EXPECT_EQ(filler_result.prefill, "remote_failed");
  EXPECT_EQ(filler_result.tokens.size(), 4u);
  EXPECT_EQ(service_.received.load(), 1);  // only the filler asked P
  const std::string metrics = d_->metrics().render();
  EXPECT_EQ(testing::metricValue(metrics, "tandem:prefills_total{kind=\"local\"}"), 1);
  EXPECT_EQ(testing::metricValue(metrics, "tandem:prefills_total{kind=\"remote_failed\"}"), 1);
}

}  // namespace
}  // namespace tandem::worker
