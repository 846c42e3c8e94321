// What a peer sharing D's KV storage can do to it: the region's size is
// sealed (a peer cannot shrink it under a mapping, which would SIGBUS), a
// region without those seals is refused, and block ids and offsets a peer
// announces are bounds-checked without overflow.
#include "server/kv_transport/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "server/kv_transport/shm_protocol.h"

namespace tandem::kv_transport {
namespace {

TEST(ShmRegionTest, ACreatedRegionCannotBeShrunkOrGrown) {
  auto region = ShmRegion::create(4096);
  ASSERT_TRUE(region.ok()) << region.status();
  const int fd = (*region)->fd();
  EXPECT_EQ(ftruncate(fd, 1024), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(ftruncate(fd, 8192), -1);
  EXPECT_EQ(errno, EPERM);
  const int seals = fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
}

TEST(ShmRegionTest, ASealedRegionIsMappedByAPeer) {
  auto region = ShmRegion::create(4096);
  ASSERT_TRUE(region.ok()) << region.status();
  static_cast<char*>((*region)->data())[100] = 42;
  auto peer = ShmRegion::map(dup((*region)->fd()), 4096);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(static_cast<char*>((*peer)->data())[100], 42);
}

TEST(ShmRegionTest, ARegionItsOwnerCouldShrinkIsRefused) {
  const int fd = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  auto peer = ShmRegion::map(fd, 4096);  // takes fd
  ASSERT_FALSE(peer.ok());
  EXPECT_EQ(peer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(peer.status().message().find("not sealed"), std::string::npos) << peer.status();
}

TEST(ShmBlockInRegionTest, AcceptsExactlyTheBlocksInsideTheRegion) {
  // 4 blocks of 256 bytes after a 1024-byte offset in a 2048-byte region.
  EXPECT_TRUE(shm::blockInRegion(0, 1024, 256, 2048));
  EXPECT_TRUE(shm::blockInRegion(3, 1024, 256, 2048));
  EXPECT_FALSE(shm::blockInRegion(4, 1024, 256, 2048));
  EXPECT_FALSE(shm::blockInRegion(-1, 1024, 256, 2048));
  EXPECT_FALSE(shm::blockInRegion(0, 1024, 0, 2048));
}

TEST(ShmBlockInRegionTest, OffsetsAndIdsThatWouldWrapAreRefused) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  // offset + (id + 1) * block_bytes wraps to a small number in 64 bits.
  EXPECT_FALSE(shm::blockInRegion(0, kMax - 100, 256, 2048));
  EXPECT_FALSE(shm::blockInRegion(0, kMax, 1, 2048));
  EXPECT_FALSE(shm::blockInRegion(std::numeric_limits<int32_t>::max(), 0, uint64_t{1} << 40, 2048));
  EXPECT_FALSE(shm::blockInRegion(1, 0, kMax / 2 + 1, 2048));
  EXPECT_FALSE(shm::blockInRegion(0, 2049, 1, 2048));
}

}  // namespace
}  // namespace tandem::kv_transport
