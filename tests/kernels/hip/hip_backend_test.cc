// The hip backend's own machinery, on the host emulator: the caching device
// memory pool, the release of every device allocation, pinned staging, and
// the event ordering between the compute and transfer streams (a block
// copied on the transfer stream is what the next compute op reads), and the
// 16-bit x the ops before a GEMM write for the vendor BLAS.
#include <cstring>

#include "common/dtype.h"
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

// `got` (F16 or BF16) holds each value of F32 `want` rounded to its type.
void expectRoundedFrom(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.numel(), want.numel());
  const auto* bits = static_cast<const uint16_t*>(got.data);
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float v = want.as<float>()[i];
    ASSERT_EQ(bits[i], got.dtype == DType::kF16 ? f32ToF16(v) : f32ToBf16(v)) << "value " << i;
  }
}

// where the vendor BLAS multiplies 16-bit operands, the ops before a GEMM
// write its x in that type (Backend::gemmInputType): their F32 results
// rounded, on which the GEMM gives the bits it gives from F32 x (which it
// rounds itself first).
TEST_P(HipBackendTest, OpsBeforeAGemmWriteItsXInSixteenBitsWithTheSameResult) {
  constexpr int64_t kRows = 24, kDim = 64, kOut = 40;
  EXPECT_EQ(backend().gemmInputType(8, DType::kF16), DType::kF32);  // decode rows: GEMVs
  EXPECT_EQ(backend().gemmInputType(kRows, DType::kF32), DType::kF32);
  EXPECT_EQ(backend().gemmInputType(kRows, DType::kQ8_0), DType::kF16);
  for (const DType type : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtypeName(type));
    ASSERT_EQ(backend().gemmInputType(kRows, type), type);
    const Tensor x_host = random(DType::kF32, kRows, kDim), delta = toDevice(random(DType::kF32, kRows, kDim));
    const Tensor weight = toDevice(random(DType::kF32, 1, kDim));
    const Tensor y32 = toDevice(zeros(DType::kF32, kRows, kDim));
    const Tensor y16 = toDevice(zeros(type, kRows, kDim));
    backend().rmsNorm(toDevice(x_host), weight, 1e-5f, y32);
    backend().rmsNorm(toDevice(x_host), weight, 1e-5f, y16);
    expectRoundedFrom(toHost(y16), toHost(y32));
    // the fused residual add (x changes in place: a copy each)
    const Tensor a32 = toDevice(zeros(DType::kF32, kRows, kDim));
    const Tensor a16 = toDevice(zeros(type, kRows, kDim));
    backend().addRmsNorm(toDevice(x_host), delta, weight, 1e-5f, a32);
    backend().addRmsNorm(toDevice(x_host), delta, weight, 1e-5f, a16);
    expectRoundedFrom(toHost(a16), toHost(a32));
    const Tensor gate = toDevice(random(DType::kF32, kRows, kDim)), up = toDevice(random(DType::kF32, kRows, kDim));
    const Tensor s32 = toDevice(zeros(DType::kF32, kRows, kDim));
    const Tensor s16 = toDevice(zeros(type, kRows, kDim));
    backend().siluMul(gate, up, s32);
    backend().siluMul(gate, up, s16);
    expectRoundedFrom(toHost(s16), toHost(s32));

    const Tensor w = toDevice(random(type, kOut, kDim));
    const Tensor from32 = toDevice(zeros(DType::kF32, kRows, kOut));
    const Tensor from16 = toDevice(zeros(DType::kF32, kRows, kOut));
    backend().matmul(y32, w, nullptr, from32);
    backend().matmul(y16, w, nullptr, from16);
    const Tensor want = toHost(from32), got = toHost(from16);
    ASSERT_EQ(std::memcmp(got.data, want.data, static_cast<size_t>(want.numel()) * 4), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Emu, HipBackendTest, ::testing::ValuesIn(hipOnEmulatorBackends()),
                         backendName);

}  // namespace
}  // namespace tandem::kernels::hip
