// A worker's internal ports require the cluster secret: every Worker API
// call and every KV push without it is UNAUTHENTICATED, and the calls the
// worker makes itself (D asking P to prefill, P pushing KV blocks to D)
// carry it, so remote prefill works between workers that share it. Without
// a secret a worker listens on loopback only.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/kv_transport/endpoint.h"
#include "server/worker/worker.h"
#include "tandem/v1/kv_transfer.grpc.pb.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

using testing::generate;
using testing::GenerateResult;
using testing::smallWorkerOptions;

const char kSecret[] = "0123456789abcdef0123456789abcdef";

grpc_util::ClusterAuthPtr auth(const std::string& secret) {
  absl::StatusOr<grpc_util::ClusterAuthPtr> a = grpc_util::ClusterAuth::create({.secret = secret});
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

WorkerPtr startAuthWorker(WorkerOptions options) {
  absl::StatusOr<WorkerPtr> worker = Worker::create(options);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? std::move(*worker) : nullptr;
}

// the status of each Worker call (Stats, Info, KvSnapshot, Prefill,
// KvEvents) made with `credentials`.
std::vector<grpc::StatusCode> workerCalls(const std::string& address,
                                         const grpc_util::ClusterAuthPtr& credentials) {
  auto stub = tandem::v1::Worker::NewStub(credentials->channel(address));
  std::vector<grpc::StatusCode> codes;
  {
    grpc::ClientContext context;
    tandem::v1::WorkerStats stats;
    codes.push_back(stub->Stats(&context, {}, &stats).error_code());
  }
  {
    grpc::ClientContext context;
    tandem::v1::WorkerInfo info;
    codes.push_back(stub->Info(&context, {}, &info).error_code());
  }
  {
    grpc::ClientContext context;
    auto reader = stub->KvSnapshot(&context, {});
    tandem::v1::KvSnapshotResponse part;
    while (reader->Read(&part)) {
    }
    codes.push_back(reader->Finish().error_code());
  }
  {
    grpc::ClientContext context;
    tandem::v1::PrefillResponse response;
    codes.push_back(stub->Prefill(&context, {}, &response).error_code());
  }
  {
    // from the first event: a worker that stored blocks sends a batch at
    // once (the deadline only bounds a broken check's wait for events).
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto reader = stub->KvEvents(&context, {});
    tandem::v1::KvEventBatch batch;
    if (reader->Read(&batch)) context.TryCancel();
    codes.push_back(reader->Finish().error_code());
  }
  return codes;
}

// a Push to D's gRPC KV receiver that sends no chunk.
grpc::StatusCode emptyPush(const std::string& kv_endpoint, const grpc_util::ClusterAuthPtr& credentials) {
  absl::StatusOr<std::vector<kv_transport::Endpoint>> endpoints =
      kv_transport::parseEndpoints(kv_endpoint);
  EXPECT_TRUE(endpoints.ok()) << endpoints.status();
  for (const kv_transport::Endpoint& e : *endpoints) {
    if (e.kind != kv_transport::TransportKind::kGrpc) continue;
    auto stub = tandem::v1::KvTransfer::NewStub(credentials->channel(e.address));
    grpc::ClientContext context;
    tandem::v1::KvPushResult result;
    auto writer = stub->Push(&context, &result);
    writer->WritesDone();
    return writer->Finish().error_code();
  }
  ADD_FAILURE() << "no grpc endpoint in " << kv_endpoint;
  return grpc::StatusCode::UNKNOWN;
}

TEST(WorkerAuthTest, TheWorkerApiAndTheKvReceiverRequireTheClusterSecret) {
  WorkerOptions options = smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH);
  options.cluster_auth = auth(kSecret);
  WorkerPtr worker = startAuthWorker(options);
  ASSERT_NE(worker, nullptr);
  const std::string address = worker->info().address();
  // two full blocks of 16 tokens: the worker stores (and reports) them.
  const auto& c = tandem::testing::storiesOracle()[0];
  std::vector<int32_t> prompt = c.prompt_ids;
  prompt.insert(prompt.end(), c.completion_ids.begin(), c.completion_ids.begin() + 32);
  std::string wrong = kSecret;
  wrong.back() = 'x';
  for (const grpc_util::ClusterAuthPtr& stranger : {grpc_util::ClusterAuth::none(), auth(wrong)}) {
    for (grpc::StatusCode code : workerCalls(address, stranger)) {
      EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED);
    }
    GenerateResult r = generate(address, prompt, 4, "", stranger);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_TRUE(r.tokens.empty());
    EXPECT_EQ(emptyPush(worker->info().kv_endpoint(), stranger), grpc::StatusCode::UNAUTHENTICATED);
  }
  // with the secret: Generate runs (and stores blocks, so KvEvents has
  // events to stream); Stats, Info, KvSnapshot (streamed) answer; an empty Prefill is
  // refused for what it is, KvEvents streams until cancelled, and an empty
  // push ends for want of its chunks.
  GenerateResult r = generate(address, prompt, 4, "", auth(kSecret));
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.tokens.size(), 4u);
  EXPECT_EQ(workerCalls(address, auth(kSecret)),
            (std::vector<grpc::StatusCode>{grpc::StatusCode::OK, grpc::StatusCode::OK,
                                           grpc::StatusCode::OK, grpc::StatusCode::INVALID_ARGUMENT,
                                           grpc::StatusCode::CANCELLED}));
  EXPECT_EQ(emptyPush(worker->info().kv_endpoint(), auth(kSecret)), grpc::StatusCode::UNAVAILABLE);
}

// D's Prefill call to P and P's KV push to D carry the secret: the prompt
// is prefilled remotely and the output equals the oracle.
TEST(WorkerAuthTest, RemotePrefillBetweenWorkersCarriesTheSecret) {
  WorkerOptions p_options = smallWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, 4);
  p_options.kv_transport = kv_transport::TransportChoice::kGrpc;
  p_options.cluster_auth = auth(kSecret);
  WorkerOptions d_options = smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, 4);
  d_options.cluster_auth = auth(kSecret);
  WorkerPtr p = startAuthWorker(p_options);
  WorkerPtr d = startAuthWorker(d_options);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const auto& c = tandem::testing::storiesOracle()[0];
  GenerateResult r = generate(d->info().address(), c.prompt_ids,
                              static_cast<int>(c.completion_ids.size()), p->info().address(),
                              auth(kSecret));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.tokens, c.completion_ids);
  EXPECT_EQ(r.prefill, "remote");
}

TEST(WorkerAuthTest, WithoutASecretAWorkerListensOnLoopbackOnly) {
  WorkerOptions options = smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH);
  options.host = "0.0.0.0";
  absl::StatusOr<WorkerPtr> open = Worker::create(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(open.status())) << open.status();
  options.cluster_auth = auth(kSecret);
  options.advertise_host = "127.0.0.1";
  WorkerPtr with_secret = startAuthWorker(options);
  EXPECT_NE(with_secret, nullptr);
}

}  // namespace
}  // namespace tandem::worker
