// Worker.Generate on real workers over loopback gRPC: local prefill, remote
// prefill on a prefill worker over each KV transport, and the fallbacks to a
// local prefill when P sends a corrupt block or cannot be reached. Every
// greedy output must equal llama.cpp's oracle.
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"
#include "server/worker/worker.h"
#include "tests/fakes/corrupt_block_fault.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

using testing::generate;
using testing::GenerateResult;
using testing::metricValue;
using testing::smallWorkerOptions;

WorkerPtr startWorker(const WorkerOptions& options) {
  auto worker = Worker::create(options);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? std::move(*worker) : nullptr;
}

// a loopback port nothing listens on (bound, then closed).
int closedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(WorkerGenerateTest, LocalPrefillEqualsTheOracle) {
  WorkerPtr worker = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH));
  ASSERT_NE(worker, nullptr);
  for (const auto& c : tandem::testing::storiesOracle()) {
    const int n = static_cast<int>(c.completion_ids.size());
    GenerateResult r = generate(worker->info().address(), c.prompt_ids, n);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.tokens, c.completion_ids) << c.prompt;
    EXPECT_EQ(r.prefill, "local");
    EXPECT_EQ(r.finish, "length");
    EXPECT_EQ(r.num_prompt_tokens, static_cast<int>(c.prompt_ids.size()));
  }
  const std::string metrics = worker->metrics().render();
  EXPECT_EQ(metricValue(metrics, "tandem:prefills_total{kind=\"local\"}"),
            tandem::testing::storiesOracle().size());
}

TEST(WorkerGenerateTest, RefusesBadRequestsAndGenerateOnAPrefillWorker) {
  WorkerPtr both = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH));
  WorkerPtr prefill = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL));
  ASSERT_NE(both, nullptr);
  ASSERT_NE(prefill, nullptr);
  const std::vector<int32_t> prompt = tandem::testing::storiesOracle()[0].prompt_ids;
  EXPECT_EQ(generate(prefill->info().address(), prompt, 4).status.error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(generate(both->info().address(), {}, 4).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(generate(both->info().address(), {1, 600, 3}, 4).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(generate(both->info().address(), std::vector<int32_t>(300, 5), 4).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(generate(both->info().address(), prompt, -1).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // also through the remote path: D validates before asking P.
  EXPECT_EQ(generate(both->info().address(), {1, 600, 3}, 4, prefill->info().address())
                .status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

class RemotePrefillTest : public ::testing::TestWithParam<kv_transport::TransportChoice> {};

// P pushes each prompt's KV to D over the transport P chooses; D decodes.
// Block size 4, so prompts span several blocks and later prompts find their
// first blocks in D's prefix cache (skip_blocks > 0).
TEST_P(RemotePrefillTest, EqualsTheOracleAndMovesTheBlocks) {
  WorkerOptions p_options = smallWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, 4);
  p_options.kv_transport = GetParam();
  WorkerPtr p = startWorker(p_options);
  WorkerPtr d = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, 4));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const std::string transport = GetParam() == kv_transport::TransportChoice::kShm ? "shm" : "grpc";
  const auto& cases = tandem::testing::storiesOracle();
  for (const auto& c : cases) {
    GenerateResult r = generate(d->info().address(), c.prompt_ids,
                                static_cast<int>(c.completion_ids.size()), p->info().address());
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.tokens, c.completion_ids) << c.prompt;
    EXPECT_EQ(r.prefill, "remote") << c.prompt;
  }
  // a long prompt (the first case's prompt and 40 of its tokens): 13 blocks.
  const auto& c = cases[0];
  std::vector<int32_t> long_prompt = c.prompt_ids;
  long_prompt.insert(long_prompt.end(), c.completion_ids.begin(), c.completion_ids.begin() + 40);
  GenerateResult r = generate(d->info().address(), long_prompt, 8, p->info().address());
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.tokens, std::vector<int32_t>(c.completion_ids.begin() + 40, c.completion_ids.end()));
  EXPECT_EQ(r.prefill, "remote");

  const std::string d_metrics = d->metrics().render();
  const std::string p_metrics = p->metrics().render();
  const std::string received = "{direction=\"received\",transport=\"" + transport + "\"}";
  const std::string sent = "{direction=\"sent\",transport=\"" + transport + "\"}";
  EXPECT_GT(metricValue(d_metrics, "tandem:kv_transfer_bytes_total" + received), 0);
  EXPECT_EQ(metricValue(d_metrics, "tandem:kv_transfer_bytes_total" + received),
            metricValue(p_metrics, "tandem:kv_transfer_bytes_total" + sent));
  EXPECT_EQ(metricValue(d_metrics, "tandem:kv_transfer_blocks_total" + received),
            metricValue(p_metrics, "tandem:kv_transfer_blocks_total" + sent));
  EXPECT_EQ(metricValue(d_metrics, "tandem:prefills_total{kind=\"remote\"}"), cases.size() + 1);
  EXPECT_EQ(metricValue(p_metrics, "tandem:prefills_total{kind=\"served\"}"), cases.size() + 1);
  EXPECT_EQ(metricValue(d_metrics, "tandem:kv_transfer_seconds_count" + received), cases.size() + 1);
}

INSTANTIATE_TEST_SUITE_P(Transports, RemotePrefillTest,
                         ::testing::Values(kv_transport::TransportChoice::kGrpc,
                                           kv_transport::TransportChoice::kShm),
                         [](const auto& info) {
                           return info.param == kv_transport::TransportChoice::kShm ? "Shm" : "Grpc";
                         });

// P corrupts block 0 of every transfer in transit: D's checksum catches it,
// D never uses the block and prefills locally.
TEST(RemotePrefillFallbackTest, CorruptBlockIsDetectedAndPrefilledLocally) {
  WorkerOptions p_options = smallWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, 4);
  p_options.kv_transport = kv_transport::TransportChoice::kGrpc;
  auto fault = std::make_shared<tandem::testing::CorruptBlockFault>(0);
  p_options.kv_faults = fault;
  WorkerPtr p = startWorker(p_options);
  WorkerPtr d = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, 4));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const auto& c = tandem::testing::storiesOracle()[1];
  GenerateResult r = generate(d->info().address(), c.prompt_ids,
                              static_cast<int>(c.completion_ids.size()), p->info().address());
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.prefill, "remote_failed");
  EXPECT_EQ(r.tokens, c.completion_ids);
  const std::string metrics = d->metrics().render();
  EXPECT_EQ(metricValue(metrics, "tandem:kv_transfer_failures_total{reason=\"checksum\"}"), 1);
  EXPECT_EQ(metricValue(metrics, "tandem:prefills_total{kind=\"remote_failed\"}"), 1);
  EXPECT_EQ(metricValue(metrics, "tandem:prefills_total{kind=\"remote\"}"), 0);
  EXPECT_GE(fault->corrupted(), 1);  // the fault went through the seam
}

TEST(RemotePrefillFallbackTest, UnreachablePrefillWorkerIsPrefilledLocally) {
  WorkerPtr d = startWorker(smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, 4));
  ASSERT_NE(d, nullptr);
  const std::string nowhere = "127.0.0.1:" + std::to_string(closedPort());
  for (const auto& c : tandem::testing::storiesOracle()) {
    GenerateResult r = generate(d->info().address(), c.prompt_ids,
                                static_cast<int>(c.completion_ids.size()), nowhere);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.prefill, "remote_failed");
    EXPECT_EQ(r.tokens, c.completion_ids) << c.prompt;
  }
  const std::string metrics = d->metrics().render();
  EXPECT_EQ(metricValue(metrics, "tandem:kv_transfer_failures_total{reason=\"prefill_unavailable\"}"),
            tandem::testing::storiesOracle().size());
  // stats are published after the step that finished the last request.
  for (int i = 0; i < 1000 && d->loop().stats().num_running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(d->loop().stats().num_running, 0);
}

}  // namespace
}  // namespace tandem::worker
