// The hip backend's own machinery, on the host emulator: the caching device
// memory pool, the release of every device allocation, pinned staging, and
// the event ordering between the compute and transfer streams (a block
// copied on the transfer stream is what the next compute op reads).
#include <cstring>

#include "kernels/emu/runtime.h"
#include "kernels/hip/hip_backend.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels::hip {
namespace {

TEST(HipBackendPoolTest, ReusesFreedBuffersOfTheSameSizeClassAndFreesAllAtTheEnd) {
  const size_t before = emu::liveAllocations();
  {
    auto backend = HipBackend::create();
    ASSERT_TRUE(backend.ok()) << backend.status();
    HipBackend& hip = **backend;
    auto a = hip.allocate(1000);
    ASSERT_TRUE(a.ok());
    void* first = (*a)->data();
    EXPECT_EQ((*a)->bytes(), 1000u);
    a->reset();
    EXPECT_EQ(hip.pooledBytes(), 1024u);
    auto b = hip.allocate(700);  // same size class: the freed block again
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b)->data(), first);
    EXPECT_EQ(hip.pooledBytes(), 0u);
    auto c = hip.allocate(5000);
    ASSERT_TRUE(c.ok());
    EXPECT_NE((*c)->data(), first);
    auto pinned = hip.allocatePinnedHost(4096);
    ASSERT_TRUE(pinned.ok());
    EXPECT_EQ(emu::liveAllocations(), before + 2);  // pinned memory is not device memory
  }
  EXPECT_EQ(emu::liveAllocations(), before);
}

// KV staging's copies: pinned host memory, a registration of existing
// memory, and a transfer stream apart from the compute stream.
TEST(HipBackendStagingTest, TransferStreamMovesBytesBetweenDeviceAndPinnedHost) {
  auto backend = HipBackend::create();
  ASSERT_TRUE(backend.ok()) << backend.status();
  HipBackend& hip = **backend;
  constexpr size_t kBytes = 3000;
  auto device = hip.allocate(kBytes);
  auto pinned = hip.allocatePinnedHost(kBytes);
  ASSERT_TRUE(device.ok() && pinned.ok());
  std::vector<unsigned char> given(kBytes);
  for (size_t i = 0; i < kBytes; ++i) given[i] = static_cast<unsigned char>(i * 7 + 1);
  const size_t registrations = emu::liveHostRegistrations();
  auto registered = hip.pinHost(given.data(), kBytes);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(emu::liveHostRegistrations(), registrations + 1);
  auto stream = hip.createTransferStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  (*stream)->copyToDevice((*device)->data(), given.data(), kBytes);
  (*stream)->copyToHost((*pinned)->data(), (*device)->data(), kBytes);
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(std::memcmp((*pinned)->data(), given.data(), kBytes), 0);
  registered->reset();
  EXPECT_EQ(emu::liveHostRegistrations(), registrations);
  // the same memory again: the registration really went
  EXPECT_TRUE(hip.pinHost(given.data(), kBytes).ok());
}

TEST(HipBackendCreateTest, ADeviceBeyondTheRuntimesCountIsAClearError) {
  // the emulator is one device, 0
  EXPECT_TRUE(HipBackend::create(0).ok());
  const auto beyond = HipBackend::create(1);
  ASSERT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(beyond.status().message(),
            "--device 1: the runtime reports 1 device(s), numbered 0 to 0");
  EXPECT_EQ(HipBackend::create(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

using HipBackendTest = BackendTest;

TEST_P(HipBackendTest, ABlockCopiedOnTheTransferStreamIsWhatTheNextOpReads) {
  kvcache::KvLayout layout{1, 1, 4, 4, DType::kF32};
  const Tensor cache =
      toDevice(zeros(DType::kF32, 2, static_cast<int64_t>(layout.blockBytes() / 4)));
  const KvCacheView view{cache.data, layout, 2};
  const Tensor k = random(DType::kF32, 1, 4), v = random(DType::kF32, 1, 4);
  backend().writeKv(toDevice(k), toDevice(v), toDevice(ints({0})), view, 0);  // block 0, slot 0
  const std::vector<int32_t> from = {0}, to = {1};
  backend().copyBlocks(view, from, view, to);
  // one token whose only key is slot 0 of block 1: attention returns its v
  AttentionBatch batch;
  batch.seq_info = toDevice(ints({0, 1, 0, 0}).reshaped(1, 4));
  batch.block_tables = toDevice(ints({1}).reshaped(1, 1));
  batch.num_seqs = 1;
  batch.max_q_len = batch.max_context = 1;
  batch.num_heads = 1;
  batch.scale = 0.5f;
  const Tensor out = toDevice(zeros(DType::kF32, 1, 4));
  backend().pagedAttention(toDevice(random(DType::kF32, 1, 4)), view, 0, batch, out);
  const Tensor got = toHost(out);
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(got.as<float>()[j], v.as<float>()[j]);
}

INSTANTIATE_TEST_SUITE_P(Emu, HipBackendTest, ::testing::ValuesIn(hipOnEmulatorBackends()),
                         backendName);

}  // namespace
}  // namespace tandem::kernels::hip
