// The weight arena (weights copied onto transparent huge pages): copies,
// alignment, chunking, lifetime; and the cpu backend's choice between
// copying imported weights there and aliasing them.
#include "kernels/cpu/weight_arena.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace tandem::kernels::cpu {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

bool holds(const Buffer& b, const std::vector<uint8_t>& want) {
  return b.bytes() == want.size() && std::memcmp(b.data(), want.data(), want.size()) == 0;
}

TEST(WeightArenaTest, CopiesEachTensorToItsOwn64ByteBoundaryInOneChunk) {
  WeightArena arena;
  const std::vector<uint8_t> a = pattern(100, 1), b = pattern(1, 7), c = pattern(4096, 9);
  auto ba = arena.copyIn(a.data(), a.size());
  auto bb = arena.copyIn(b.data(), b.size());
  auto bc = arena.copyIn(c.data(), c.size());
  ASSERT_TRUE(ba.ok() && bb.ok() && bc.ok());
  EXPECT_TRUE(holds(**ba, a));
  EXPECT_TRUE(holds(**bb, b));
  EXPECT_TRUE(holds(**bc, c));
  // a chunk starts on a huge page, each tensor on a cache line, in order,
  // none overlapping the next
  const auto at = [](const absl::StatusOr<BufferPtr>& p) { return reinterpret_cast<uintptr_t>((*p)->data()); };
  EXPECT_EQ(at(ba) % (2 * kMiB), 0u);
  EXPECT_EQ(at(bb) % 64, 0u);
  EXPECT_EQ(at(bc) % 64, 0u);
  EXPECT_EQ(at(bb), at(ba) + 128);
  EXPECT_EQ(at(bc), at(bb) + 64);
  EXPECT_EQ(arena.reservedBytes(), 64 * kMiB);
  // the copies are the arena's: changing the source changes nothing
  std::vector<uint8_t> source = pattern(256, 4);
  auto copy = arena.copyIn(source.data(), source.size());
  ASSERT_TRUE(copy.ok());
  source[0] ^= 0xff;
  EXPECT_TRUE(holds(**copy, pattern(256, 4)));
}

TEST(WeightArenaTest, ATensorLargerThanAChunkGetsOneOfItsOwnSize) {
  WeightArena arena;
  const std::vector<uint8_t> small = pattern(1000, 3);
  auto first = arena.copyIn(small.data(), small.size());
  ASSERT_TRUE(first.ok());
  const std::vector<uint8_t> big = pattern(65 * kMiB + 3, 5);
  auto large = arena.copyIn(big.data(), big.size());
  ASSERT_TRUE(large.ok());
  EXPECT_TRUE(holds(**large, big));
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*large)->data()) % (2 * kMiB), 0u);
  // 64 MiB for the first chunk, 65 MiB + 3 rounded up to 2 MiB pages
  EXPECT_EQ(arena.reservedBytes(), 64 * kMiB + 66 * kMiB);
  // the next small tensor fits the large one's last huge page
  auto after = arena.copyIn(small.data(), small.size());
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(holds(**after, small));
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*after)->data()),
            reinterpret_cast<uintptr_t>((*large)->data()) + (big.size() + 63) / 64 * 64);
  EXPECT_EQ(arena.reservedBytes(), 64 * kMiB + 66 * kMiB);
  // and one that does not starts another chunk
  const std::vector<uint8_t> mid = pattern(2 * kMiB, 6);
  auto next = arena.copyIn(mid.data(), mid.size());
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(holds(**next, mid));
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*next)->data()) % (2 * kMiB), 0u);
  EXPECT_EQ(arena.reservedBytes(), 2 * 64 * kMiB + 66 * kMiB);
  EXPECT_TRUE(holds(**first, small));
}

TEST(WeightArenaTest, BuffersOutliveTheArena) {
  const std::vector<uint8_t> v = pattern(5000, 11);
  BufferPtr kept;
  {
    WeightArena arena;
    auto b = arena.copyIn(v.data(), v.size());
    ASSERT_TRUE(b.ok());
    kept = std::move(*b);
  }
  // the chunk lives as long as a buffer in it (AddressSanitizer checks the read)
  EXPECT_TRUE(holds(*kept, v));
}

TEST(CpuBackendWeightsTest, HugePagesCopyImportedWeightsWhereTheKernelGivesThem) {
  const std::vector<uint8_t> w = pattern(3000, 2);
  auto huge = CpuBackend::create({.num_threads = 1, .weights = CpuBackendOptions::Weights::kHugePages});
  ASSERT_TRUE(huge.ok()) << huge.status();
  auto copied = (*huge)->importHost(w.data(), w.size());
  ASSERT_TRUE(copied.ok());
  EXPECT_TRUE(holds(**copied, w));
  if (transparentHugePagesAvailable()) {
    EXPECT_NE((*copied)->data(), w.data());
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*copied)->data()) % (2 * kMiB), 0u);
  } else {
    EXPECT_EQ((*copied)->data(), w.data());
  }
  auto mapped = CpuBackend::create({.num_threads = 1, .weights = CpuBackendOptions::Weights::kMapped});
  ASSERT_TRUE(mapped.ok());
  auto aliased = (*mapped)->importHost(w.data(), w.size());
  ASSERT_TRUE(aliased.ok());
  EXPECT_EQ((*aliased)->data(), w.data());
}

TEST(CpuBackendWeightsTest, TheEnvironmentPicksThemAndABadValueIsAnError) {
  const char* before = std::getenv("TANDEM_CPU_WEIGHTS");
  const std::string saved = before != nullptr ? before : "";
  const std::vector<uint8_t> w = pattern(64, 4);
  ::setenv("TANDEM_CPU_WEIGHTS", "mapped", 1);
  auto mapped = CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ((*(*mapped)->importHost(w.data(), w.size()))->data(), w.data());
  ::setenv("TANDEM_CPU_WEIGHTS", "tmpfs", 1);
  auto bad = CpuBackend::create({.num_threads = 1});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("TANDEM_CPU_WEIGHTS"), std::string::npos);
  // an explicit option wins over the environment
  auto option = CpuBackend::create({.num_threads = 1, .weights = CpuBackendOptions::Weights::kMapped});
  EXPECT_TRUE(option.ok());
  if (before != nullptr) {
    ::setenv("TANDEM_CPU_WEIGHTS", saved.c_str(), 1);
  } else {
    ::unsetenv("TANDEM_CPU_WEIGHTS");
  }
}

}  // namespace
}  // namespace tandem::kernels::cpu
