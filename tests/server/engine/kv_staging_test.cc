// KvStaging on both backends: the pool of pinned slots is bounded, leases
// are all or nothing and give their slots back however they end, and
// blocks go device -> slots -> device bit-exactly (on the hip backend over
// the host emulator, through its own transfer stream).
#include "server/engine/kv_staging.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "kernels/backend_factory.h"
#include "kernels/hip/hip_backend.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

constexpr int kBlockSize = 4;
constexpr int kNumBlocks = 8;

class KvStagingTest : public ::testing::TestWithParam<kernels::BackendKind> {
 protected:
  void SetUp() override {
    auto weights = model::ModelWeights::load(tandem::testing::storiesGguf());
    ASSERT_TRUE(weights.ok()) << weights.status();
    weights_ = std::move(*weights);
    if (GetParam() == kernels::BackendKind::kHip) {
      auto hip = kernels::hip::HipBackend::create();
      ASSERT_TRUE(hip.ok()) << hip.status();
      backend_ = std::move(*hip);
    } else {
      kernels::BackendOptions options;
      options.num_threads = 1;
      auto cpu = kernels::createBackend(options);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      backend_ = std::move(*cpu);
    }
    for (ModelRunnerPtr* runner : {&src_, &dst_}) {
      auto r = ModelRunner::create(*weights_, *backend_, kNumBlocks, kBlockSize);
      ASSERT_TRUE(r.ok()) << r.status();
      *runner = std::move(*r);
    }
  }
  void TearDown() override {
    src_.reset();
    dst_.reset();
    backend_.reset();
  }

  KvStagingPtr staging(int slots) {
    auto s = KvStaging::create(*backend_, *src_, slots);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::vector<std::byte> block(const ModelRunner& runner, int id) {
    std::vector<std::byte> bytes(runner.kvLayout().blockBytes());
    backend_->download(bytes.data(), runner.blockData(id), bytes.size());
    return bytes;
  }

  model::ModelWeightsPtr weights_;
  std::unique_ptr<kernels::Backend> backend_;
  ModelRunnerPtr src_, dst_;
};

TEST_P(KvStagingTest, LeasesAreAllOrNothingWithinTheBoundedPool) {
  KvStagingPtr s = staging(4);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->capacity(), 4);
  EXPECT_EQ(s->blockBytes(), src_->kvLayout().blockBytes());
  // more than the pool ever holds: refused, saying how to grow it
  const auto too_big = s->acquire(5);
  ASSERT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("--kv-staging-bytes"), std::string::npos);
  EXPECT_EQ(s->acquire(0).status().code(), absl::StatusCode::kInvalidArgument);

  auto three = s->acquire(3);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->size(), 3);
  EXPECT_EQ(s->freeSlots(), 1);
  // two do not fit beside three: nothing is taken
  EXPECT_EQ(s->acquire(2).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s->freeSlots(), 1);
  auto one = s->acquire(1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(s->freeSlots(), 0);
  // the slots are distinct and inside the pool
  std::vector<int32_t> all = three->slots();
  all.push_back(one->slots()[0]);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST_P(KvStagingTest, SlotsComeBackWhenALeaseIsResetMovedOrDestroyed) {
  KvStagingPtr s = staging(4);
  ASSERT_NE(s, nullptr);
  {
    auto a = s->acquire(2);
    ASSERT_TRUE(a.ok());
    KvStaging::Lease moved = std::move(*a);
    EXPECT_EQ(s->freeSlots(), 2);
    a->reset();  // the moved-from lease holds nothing
    EXPECT_EQ(s->freeSlots(), 2);
    moved.reset();
    EXPECT_EQ(s->freeSlots(), 4);
    moved.reset();  // idempotent
    EXPECT_EQ(s->freeSlots(), 4);
    auto b = s->acquire(4);
    ASSERT_TRUE(b.ok());
    auto c = s->acquire(1);
    EXPECT_FALSE(c.ok());
    // assigning over a lease gives its old slots back
    KvStaging::Lease target = std::move(*b);
    target = KvStaging::Lease();
    EXPECT_EQ(s->freeSlots(), 4);
    auto d = s->acquire(3);
    ASSERT_TRUE(d.ok());
  }  // d destroyed
  EXPECT_EQ(s->freeSlots(), 4);
  // every transfer of a long run finds the whole pool again
  for (int i = 0; i < 100; ++i) {
    auto lease = s->acquire(1 + i % 4);
    ASSERT_TRUE(lease.ok()) << i;
  }
  EXPECT_EQ(s->freeSlots(), 4);
}

// P's side then D's: blocks 5, 2, 7 of one KV storage through the slots
// into blocks 0, 1, 3 of another, bit for bit; the rest untouched.
TEST_P(KvStagingTest, BlocksGoThroughTheSlotsBitExactly) {
  const size_t bytes = src_->kvLayout().blockBytes();
  std::mt19937 rng(17);
  std::vector<std::vector<std::byte>> written(kNumBlocks, std::vector<std::byte>(bytes));
  for (int b = 0; b < kNumBlocks; ++b) {
    for (std::byte& x : written[b]) x = static_cast<std::byte>(rng());
    backend_->upload(src_->blockData(b), written[b].data(), bytes);
  }
  const std::vector<std::byte> zero(bytes);
  for (int b = 0; b < kNumBlocks; ++b) backend_->upload(dst_->blockData(b), zero.data(), bytes);

  KvStagingPtr p = staging(4);
  auto d_made = KvStaging::create(*backend_, *dst_, 4);
  ASSERT_TRUE(d_made.ok()) << d_made.status();
  KvStagingPtr d = std::move(*d_made);
  auto sent = p->acquire(3);
  ASSERT_TRUE(sent.ok());
  const std::vector<int32_t> from = {5, 2, 7};
  // in two calls, as a prefill's chunks complete
  ASSERT_TRUE(p->download(std::span(from).first(1), *sent, 0).ok());
  ASSERT_TRUE(p->download(std::span(from).subspan(1), *sent, 1).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(std::memcmp(p->slotData(sent->slots()[i]), written[from[i]].data(), bytes), 0) << i;
  }
  // "the transport": slot bytes into D's landing slots
  auto landed = d->acquire(3);
  ASSERT_TRUE(landed.ok());
  for (int i = 0; i < 3; ++i) {
    std::memcpy(d->slotData(landed->slots()[i]), p->slotData(sent->slots()[i]), bytes);
  }
  const std::vector<int32_t> to = {0, 1, 3};
  ASSERT_TRUE(d->upload(*landed, 0, to).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(block(*dst_, to[i]), written[from[i]]) << i;
  for (int b : {2, 4, 5, 6, 7}) EXPECT_EQ(block(*dst_, b), zero) << b;
}

// prefill calls stage on executor threads side by side: a slot is never in
// two leases at once, every download lands in its own slots, and the pool
// is whole again at the end.
TEST_P(KvStagingTest, ConcurrentTransfersNeverShareASlot) {
  const size_t bytes = src_->kvLayout().blockBytes();
  for (int b = 0; b < kNumBlocks; ++b) {
    const std::vector<std::byte> fill(bytes, static_cast<std::byte>(b + 1));
    backend_->upload(src_->blockData(b), fill.data(), bytes);
  }
  KvStagingPtr s = staging(5);
  ASSERT_NE(s, nullptr);
  std::vector<std::atomic<int>> holders(5);
  std::atomic<int> errors{0}, staged{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto lease = s->acquire(1 + (t + i) % 2);
        if (!lease.ok()) continue;  // the pool was short: shed, as a call does
        for (int32_t slot : lease->slots()) {
          if (holders[slot].fetch_add(1) != 0) ++errors;
        }
        std::vector<int32_t> blocks;
        for (int j = 0; j < lease->size(); ++j) blocks.push_back((t + i + j) % kNumBlocks);
        if (!s->download(blocks, *lease, 0).ok()) ++errors;
        for (int j = 0; j < lease->size(); ++j) {
          const auto* slot = static_cast<const std::byte*>(s->slotData(lease->slots()[j]));
          const auto want = static_cast<std::byte>(blocks[j] + 1);
          if (slot[0] != want || slot[bytes - 1] != want) ++errors;
        }
        for (int32_t slot : lease->slots()) holders[slot].fetch_sub(1);
        ++staged;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(staged.load(), 0);
  EXPECT_EQ(s->freeSlots(), 5);
}

// D's landing slots live in memory the worker gives (its memfd): staging
// pins it for as long as it lives and reads and writes it there.
TEST_P(KvStagingTest, GivenHostMemoryIsPinnedAndUsed) {
  std::vector<std::byte> memory(2 * src_->kvLayout().blockBytes() + 64);
  size_t asked = 0;
  auto s = KvStaging::create(*backend_, *src_, 2, [&](size_t bytes) -> absl::StatusOr<void*> {
    asked = bytes;
    return memory.data();
  });
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(asked, 2 * src_->kvLayout().blockBytes());
  EXPECT_EQ((*s)->data(), memory.data());
  EXPECT_EQ((*s)->slotData(1), memory.data() + src_->kvLayout().blockBytes());
  auto failing = KvStaging::create(*backend_, *src_, 2, [](size_t) -> absl::StatusOr<void*> {
    return absl::ResourceExhaustedError("no memfd");
  });
  EXPECT_EQ(failing.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(KvStaging::create(*backend_, *src_, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, KvStagingTest,
                         ::testing::Values(kernels::BackendKind::kCpu, kernels::BackendKind::kHip),
                         [](const auto& info) {
                           return std::string(kernels::backendKindName(info.param));
                         });

}  // namespace
}  // namespace tandem::engine
