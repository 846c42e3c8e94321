// Disaggregated workers on the hip backend (over the host emulator): G1 KV
// lives in "device" memory, so P stages the blocks it sends through its
// pinned pool and D lands them in its own before uploading them into G1,
// both on transfer streams apart from the compute stream. Over each KV
// transport the greedy tokens equal llama.cpp's oracle, which the cpu
// backend's workers reproduce too (worker_generate_test): the KV arrived
// bit-exactly (D verifies every block's checksum on the landed bytes, and
// one wrong bit would change the continuation). A staging pool too small
// for a prompt sheds the transfer to D's local prefill.
#include <cstdlib>

#include "gtest/gtest.h"
#include "kernels/hip/hip_backend.h"
#include "server/worker/worker.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

using testing::generate;
using testing::GenerateResult;
using testing::metricValue;

// a small worker whose engine runs the hip kernels on the emulator.
WorkerOptions hipWorkerOptions(WorkerRole role, kv_transport::TransportChoice transport) {
  WorkerOptions o = testing::smallWorkerOptions(role, 4);
  o.kv_transport = transport;
  o.prefill_timeout = std::chrono::milliseconds(120000);  // the emulator is slow
  o.engine.backend = kernels::BackendKind::kHip;
  o.engine.max_num_seqs = 2;
  o.engine.max_model_len = 128;
  o.engine.create_backend =
      [](const kernels::BackendOptions& b) -> absl::StatusOr<std::unique_ptr<kernels::Backend>> {
    auto hip = kernels::hip::HipBackend::create(b.device);
    if (!hip.ok()) return hip.status();
    return std::unique_ptr<kernels::Backend>(std::move(*hip));
  };
  return o;
}

WorkerPtr startWorker(const WorkerOptions& options) {
  auto worker = Worker::create(options);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? std::move(*worker) : nullptr;
}

std::string transportName(kv_transport::TransportChoice t) {
  switch (t) {
    case kv_transport::TransportChoice::kShm: return "shm";
    case kv_transport::TransportChoice::kUcx: return "ucx";
    default: return "grpc";
  }
}

class HipWorkerTransferTest : public ::testing::TestWithParam<kv_transport::TransportChoice> {
 protected:
  void SetUp() override {
    // UCX over loopback TCP, as on a machine without RDMA
    if (GetParam() == kv_transport::TransportChoice::kUcx) setenv("UCX_TLS", "tcp", 1);
  }
};

// two prompts, the second sharing its first blocks with the first in D's
// prefix cache (skip_blocks > 0 after the first).
TEST_P(HipWorkerTransferTest, PrefillOnOneGpuWorkerDecodesOnAnotherLikeTheOracle) {
  WorkerPtr p = startWorker(hipWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, GetParam()));
  WorkerPtr d = startWorker(hipWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, GetParam()));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const auto& c = tandem::testing::storiesOracle()[1];
  constexpr int kTokens = 12;
  const std::vector<int32_t> want(c.completion_ids.begin(), c.completion_ids.begin() + kTokens);
  GenerateResult r = generate(d->info().address(), c.prompt_ids, kTokens, p->info().address());
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.prefill, "remote");
  EXPECT_EQ(r.tokens, want);

  // the prompt and its first 8 tokens: the prompt's full blocks are cached on D
  std::vector<int32_t> longer = c.prompt_ids;
  longer.insert(longer.end(), c.completion_ids.begin(), c.completion_ids.begin() + 8);
  GenerateResult r2 = generate(d->info().address(), longer, 4, p->info().address());
  ASSERT_TRUE(r2.status.ok()) << r2.status.error_message();
  EXPECT_EQ(r2.prefill, "remote");
  EXPECT_GT(r2.num_cached_tokens, 0);
  EXPECT_EQ(r2.tokens,
            std::vector<int32_t>(c.completion_ids.begin() + 8, c.completion_ids.begin() + 12));

  const std::string transport = transportName(GetParam());
  const std::string d_metrics = d->metrics().render();
  const std::string p_metrics = p->metrics().render();
  const std::string received = "{direction=\"received\",transport=\"" + transport + "\"}";
  const std::string sent = "{direction=\"sent\",transport=\"" + transport + "\"}";
  EXPECT_GT(metricValue(d_metrics, "tandem:kv_transfer_bytes_total" + received), 0);
  EXPECT_EQ(metricValue(d_metrics, "tandem:kv_transfer_bytes_total" + received),
            metricValue(p_metrics, "tandem:kv_transfer_bytes_total" + sent));
  EXPECT_EQ(metricValue(d_metrics, "tandem:prefills_total{kind=\"remote\"}"), 2);
}

INSTANTIATE_TEST_SUITE_P(Transports, HipWorkerTransferTest,
                         ::testing::Values(kv_transport::TransportChoice::kGrpc,
                                           kv_transport::TransportChoice::kShm,
                                           kv_transport::TransportChoice::kUcx),
                         [](const auto& info) { return transportName(info.param); });

// P's pool holds 2 blocks of 4 tokens, the prompt needs 3: P refuses the
// Prefill call (RESOURCE_EXHAUSTED) without computing, D prefills locally,
// and the next prompt that fits goes remote again.
TEST(HipWorkerStagingTest, APromptBeyondTheStagingPoolIsPrefilledLocally) {
  WorkerOptions p_options =
      hipWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, kv_transport::TransportChoice::kGrpc);
  // stories260K: 5 layers x K,V x 4 kv heads x 8 dims x F32 = 1280 bytes a token
  p_options.kv_staging_bytes = 2 * 4 * 1280;
  WorkerPtr p = startWorker(p_options);
  WorkerPtr d = startWorker(
      hipWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, kv_transport::TransportChoice::kGrpc));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const auto& c = tandem::testing::storiesOracle()[1];  // 12 prompt tokens: 3 blocks
  ASSERT_EQ(c.prompt_ids.size(), 12u);
  const std::vector<int32_t> want(c.completion_ids.begin(), c.completion_ids.begin() + 4);
  GenerateResult r = generate(d->info().address(), c.prompt_ids, 4, p->info().address());
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.prefill, "remote_failed");
  EXPECT_EQ(r.tokens, want);
  EXPECT_EQ(metricValue(d->metrics().render(),
                        "tandem:kv_transfer_failures_total{reason=\"prefill_error\"}"),
            1);
  // 6 tokens: 2 blocks fit, and the pool got its slots back from the refusal
  const std::vector<int32_t> shorter(c.prompt_ids.begin(), c.prompt_ids.begin() + 6);
  GenerateResult r2 = generate(d->info().address(), shorter, 2, p->info().address());
  ASSERT_TRUE(r2.status.ok()) << r2.status.error_message();
  EXPECT_EQ(r2.prefill, "remote");
  GenerateResult r3 = generate(d->info().address(), shorter, 2, p->info().address());
  EXPECT_EQ(r3.tokens, r2.tokens);
}

// D's landing pool too small: D does not even ask P and prefills locally.
TEST(HipWorkerStagingTest, ALandingPoolTooSmallOnDecodeFallsBackWithoutCallingPrefill) {
  WorkerPtr p = startWorker(
      hipWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL, kv_transport::TransportChoice::kGrpc));
  WorkerOptions d_options =
      hipWorkerOptions(tandem::v1::WORKER_ROLE_DECODE, kv_transport::TransportChoice::kGrpc);
  d_options.kv_staging_bytes = 2 * 4 * 1280;
  WorkerPtr d = startWorker(d_options);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  const auto& c = tandem::testing::storiesOracle()[1];
  GenerateResult r = generate(d->info().address(), c.prompt_ids, 4, p->info().address());
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.prefill, "remote_failed");
  EXPECT_EQ(r.tokens, std::vector<int32_t>(c.completion_ids.begin(), c.completion_ids.begin() + 4));
  EXPECT_EQ(metricValue(d->metrics().render(),
                        "tandem:kv_transfer_failures_total{reason=\"expect_failed\"}"),
            1);
  EXPECT_EQ(metricValue(p->metrics().render(), "tandem:prefills_total{kind=\"served\"}"), 0);
}

TEST(HipWorkerStagingTest, AStagingBudgetBelowOneBlockIsRefusedAtStart) {
  WorkerOptions options =
      hipWorkerOptions(tandem::v1::WORKER_ROLE_BOTH, kv_transport::TransportChoice::kGrpc);
  options.kv_staging_bytes = 1000;
  auto worker = Worker::create(options);
  ASSERT_EQ(worker.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(worker.status().message().find("--kv-staging-bytes"), std::string::npos);
}

}  // namespace
}  // namespace tandem::worker
