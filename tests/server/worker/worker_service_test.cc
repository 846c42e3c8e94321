// The worker's other calls: KvEvents and KvSnapshot (what the router's KV
// index reads), Stats, Info, gRPC health, and /metrics + /health over HTTP.
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "kvcache/prefix_hash.h"
#include "server/worker/worker.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

using testing::generate;
using testing::smallWorkerOptions;

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto worker = Worker::create(smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH, 4));
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = std::move(*worker);
    stub_ = tandem::v1::Worker::NewStub(
        grpc::CreateChannel(worker_->info().address(), grpc::InsecureChannelCredentials()));
  }

  // Worker.KvSnapshot's parts, in order; the status it ended with.
  std::pair<grpc::Status, std::vector<tandem::v1::KvSnapshotResponse>> readSnapshot() {
    auto ctx = context();
    auto reader = stub_->KvSnapshot(ctx.get(), {});
    std::vector<tandem::v1::KvSnapshotResponse> parts;
    tandem::v1::KvSnapshotResponse part;
    while (reader->Read(&part)) parts.push_back(part);
    return {reader->Finish(), std::move(parts)};
  }

  std::unique_ptr<grpc::ClientContext> context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  WorkerPtr worker_;
  std::unique_ptr<tandem::v1::Worker::Stub> stub_;
};

TEST_F(WorkerServiceTest, KvEventsStreamsTheBlocksARequestStored) {
  const auto& c = tandem::testing::storiesOracle()[1];  // 12 prompt tokens: 3 full blocks
  ASSERT_TRUE(generate(worker_->info().address(), c.prompt_ids, 8).status.ok());
  const std::vector<kvcache::BlockHash> prompt_hashes = kvcache::blockHashes(c.prompt_ids, 4);
  ASSERT_EQ(prompt_hashes.size(), 3u);

  auto ctx = context();
  tandem::v1::KvEventsRequest request;
  auto reader = stub_->KvEvents(ctx.get(), request);
  std::set<uint64_t> stored;
  std::map<uint64_t, uint64_t> parent;
  uint64_t last_id = 0;
  tandem::v1::KvEventBatch batch;
  while (stored.size() < prompt_hashes.size() && reader->Read(&batch)) {
    EXPECT_EQ(batch.worker_id(), worker_->info().worker_id());
    for (const auto& e : batch.events()) {
      EXPECT_EQ(e.event_id(), last_id + 1);  // numbered 1, 2, 3, ... without gaps
      last_id = e.event_id();
      if (e.has_stored()) {
        stored.insert(e.stored().hash());
        parent[e.stored().hash()] = e.stored().parent_hash();
      }
    }
    bool all = true;
    for (auto h : prompt_hashes) all = all && stored.count(h);
    if (all) break;
  }
  for (size_t i = 0; i < prompt_hashes.size(); ++i) {
    ASSERT_TRUE(stored.count(prompt_hashes[i])) << "block " << i;
    EXPECT_EQ(parent[prompt_hashes[i]], i == 0 ? kvcache::kRootParentHash : prompt_hashes[i - 1]);
  }
  ctx->TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);

  auto [snapshot_status, parts] = readSnapshot();
  ASSERT_TRUE(snapshot_status.ok()) << snapshot_status.error_message();
  ASSERT_EQ(parts.size(), 1u);  // a few blocks: one part
  const tandem::v1::KvSnapshotResponse& snapshot = parts[0];
  EXPECT_EQ(snapshot.num_blocks(), static_cast<uint64_t>(snapshot.blocks_size()));
  EXPECT_EQ(snapshot.worker_id(), worker_->info().worker_id());
  EXPECT_GE(snapshot.last_event_id(), last_id);
  std::set<uint64_t> in_snapshot;
  for (const auto& b : snapshot.blocks()) in_snapshot.insert(b.hash());
  for (auto h : prompt_hashes) EXPECT_TRUE(in_snapshot.count(h));

  // the finished request leaves the engine's counts on its next step: poll
  // (generous deadline) rather than read once.
  tandem::v1::WorkerStats stats;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    ASSERT_TRUE(stub_->Stats(context().get(), {}, &stats).ok());
    if (stats.num_running() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(stats.worker_id(), worker_->info().worker_id());
  EXPECT_GE(stats.last_event_id(), snapshot.last_event_id());
  EXPECT_EQ(stats.num_blocks(), worker_->info().num_blocks());
  EXPECT_EQ(stats.num_running(), 0);
  EXPECT_EQ(stats.num_waiting(), 0);
  EXPECT_EQ(stats.num_transfers_in_flight(), 0);
}

// gRPC refuses messages over 4 MiB by default: a snapshot of 200000 blocks
// (~5 MiB encoded, beyond the ~170k a single message can carry) arrives in
// parts of at most 16384 blocks, every part from the same worker and event
// id, the first announcing the total.
TEST_F(WorkerServiceTest, KvSnapshotStreamsMoreBlocksThanOneMessageCanCarry) {
  constexpr uint64_t kBlocks = 200000;
  kvcache::KvEventLog& log = worker_->loop().kvEvents();
  // chained as a prompt's blocks are: 64-bit hash and parent, ~25 bytes each.
  uint64_t parent = kvcache::kRootParentHash;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    const uint64_t hash = 0x9e3779b97f4a7c15ull * (i + 1);
    log.onKvEvent(kvcache::BlockStored{hash, parent, kvcache::KvTier::kDevice});
    parent = hash;
  }
  auto [status, parts] = readSnapshot();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(parts.size(), (kBlocks + 16383) / 16384);
  EXPECT_EQ(parts[0].num_blocks(), kBlocks);
  tandem::v1::KvSnapshotResponse whole;
  std::set<uint64_t> hashes;
  for (const tandem::v1::KvSnapshotResponse& part : parts) {
    EXPECT_LE(part.blocks_size(), 16384);
    EXPECT_EQ(part.worker_id(), worker_->info().worker_id());
    EXPECT_EQ(part.last_event_id(), kBlocks);
    for (const auto& b : part.blocks()) {
      hashes.insert(b.hash());
      *whole.add_blocks() = b;
    }
  }
  EXPECT_EQ(hashes.size(), kBlocks);
  EXPECT_EQ(hashes.count(0x9e3779b97f4a7c15ull * kBlocks), 1u);
  // as one message it would not have passed gRPC's default limit.
  EXPECT_GT(whole.ByteSizeLong(), size_t{4} << 20);
}

TEST_F(WorkerServiceTest, KvEventsAfterTheLastIdWaitsForNewEvents) {
  const auto& c = tandem::testing::storiesOracle()[0];
  ASSERT_TRUE(generate(worker_->info().address(), c.prompt_ids, 4).status.ok());
  const uint64_t last = worker_->loop().kvEvents().lastEventId();
  ASSERT_GT(last, 0u);
  auto ctx = context();
  tandem::v1::KvEventsRequest request;
  request.set_after_event_id(last);
  auto reader = stub_->KvEvents(ctx.get(), request);
  // a new prompt stores new blocks: the stream delivers them from last + 1.
  ASSERT_TRUE(generate(worker_->info().address(), tandem::testing::storiesOracle()[3].prompt_ids, 4)
                  .status.ok());
  tandem::v1::KvEventBatch batch;
  ASSERT_TRUE(reader->Read(&batch));
  ASSERT_GT(batch.events_size(), 0);
  EXPECT_EQ(batch.events(0).event_id(), last + 1);
  ctx->TryCancel();
  reader->Finish();
}

// an id above the worker's last comes from an earlier life of the worker
// (the router saw it before a restart): the stream ends with OUT_OF_RANGE
// at once so the router resyncs from a snapshot.
TEST_F(WorkerServiceTest, KvEventsAfterAnIdNeverIssuedIsOutOfRange) {
  const auto& c = tandem::testing::storiesOracle()[0];
  ASSERT_TRUE(generate(worker_->info().address(), c.prompt_ids, 4).status.ok());
  const uint64_t last = worker_->loop().kvEvents().lastEventId();
  ASSERT_GT(last, 0u);
  auto ctx = context();
  tandem::v1::KvEventsRequest request;
  request.set_after_event_id(last + 5);
  auto reader = stub_->KvEvents(ctx.get(), request);
  tandem::v1::KvEventBatch batch;
  EXPECT_FALSE(reader->Read(&batch));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(WorkerServiceTest, InfoDescribesTheWorker) {
  tandem::v1::WorkerInfo info;
  ASSERT_TRUE(stub_->Info(context().get(), {}, &info).ok());
  EXPECT_EQ(info.worker_id().size(), 16u);
  EXPECT_EQ(info.worker_id(), worker_->info().worker_id());
  EXPECT_EQ(info.address(), "127.0.0.1:" + std::to_string(worker_->port()));
  EXPECT_EQ(info.role(), tandem::v1::WORKER_ROLE_BOTH);
  EXPECT_EQ(info.model_name(), "stories260K");
  EXPECT_EQ(info.max_model_len(), 256);
  EXPECT_EQ(info.vocab_size(), 512);
  EXPECT_EQ(info.block_size(), 4);
  EXPECT_GT(info.num_blocks(), 0);
  EXPECT_EQ(info.metrics_url(),
            "http://127.0.0.1:" + std::to_string(worker_->metricsPort()) + "/metrics");
  EXPECT_NE(info.kv_endpoint().find("grpc://127.0.0.1:"), std::string::npos) << info.kv_endpoint();
  EXPECT_NE(info.kv_endpoint().find("shm://"), std::string::npos) << info.kv_endpoint();
}

TEST_F(WorkerServiceTest, HealthIsServingAndMetricsAreServedOverHttp) {
  grpc::GenericStub generic(
      grpc::CreateChannel(worker_->info().address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  grpc::Slice empty_message("", 0);  // HealthCheckRequest{service: ""} has no bytes
  grpc::ByteBuffer request(&empty_message, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(s); });
  ASSERT_TRUE(done.get_future().get().ok());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING

  ASSERT_TRUE(generate(worker_->info().address(), tandem::testing::storiesOracle()[0].prompt_ids, 4)
                  .status.ok());
  auto [code, body] = testing::httpGet(worker_->metricsPort(), "/metrics");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(testing::metricValue(body, "tandem:prefills_total{kind=\"local\"}"), 1);
  EXPECT_NE(body.find("tandem:num_requests_running"), std::string::npos);
  EXPECT_NE(body.find("tandem:kv_cache_usage_perc"), std::string::npos);
  EXPECT_EQ(testing::httpGet(worker_->metricsPort(), "/health").first, 200);

  worker_->shutdown(std::chrono::milliseconds(100));
  EXPECT_EQ(testing::httpGet(worker_->metricsPort(), "/health").first, 0);  // closed
}

}  // namespace
}  // namespace tandem::worker
