// The engine over a real G3 (kvcache::DiskTier in a temp directory) on
// stories260K: a prompt's blocks pushed out of a small G1 reach the disk; a
// new engine on the same directory onboards them (cached, oracle output).
// Then each way the file can go bad: a flipped payload byte, a flipped header
// byte, a truncated file, records of another model: each is detected (its
// DiskTierStats counter moves), the blocks are recomputed, and the greedy
// output still equals llama.cpp's oracle. A disk that refuses writes (a
// file-size limit: EFBIG, as a full disk's ENOSPC) disables G3 and serving
// goes on, exact.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/disk_tier.h"
#include "server/engine/disk_tier_opener.h"
#include "server/engine/engine_loop.h"
#include "tests/server/engine/engine_loop_test_support.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

using testing_support::Case;
using testing_support::Collector;
using testing_support::eventually;
using testing_support::greedy;
using testing_support::makeLoop;
using testing_support::oracleCases;

constexpr int kBlockSize = 4;
// stories260K: 5 layers * 2 (K, V) * 4 kv heads * 8 dims * 4 bytes per token.
constexpr size_t kBlockBytes = 5 * 2 * 4 * 8 * 4 * kBlockSize;
constexpr int kG1Blocks = 20;  // about one sequence
const size_t kRecordBytes = kvcache::recordBytesFor(kBlockBytes);

class EngineLoopDiskTierTest : public ::testing::Test {
 protected:
  // an engine with G1 of kG1Blocks and G3 (no G2) in dir_; `foreign` opens
  // the tier with another weights id (another model's fingerprint).
  std::unique_ptr<EngineLoop> open(bool foreign = false, const char* io = "uring") {
    EngineAssemblyOptions o = testing_support::smallOptions(kBlockSize, 16);
    o.kv_budget_bytes = kG1Blocks * kBlockBytes;
    o.max_model_len = 128;
    o.tiers.disk_path = dir_;
    o.tiers.disk_bytes = 64 * kRecordBytes;
    o.tiers.disk_io = io;
    o.tiers.disk_min_hits = 1;
    disk_ = nullptr;
    o.open_disk_tier = [this, foreign](const DiskTierRequest& request) -> absl::StatusOr<OpenedDiskTier> {
      DiskTierRequest r = request;
      if (foreign) r.fingerprint.weights_id ^= 1;
      absl::StatusOr<OpenedDiskTier> opened = openDiskTier(r);
      if (opened.ok()) disk_ = static_cast<kvcache::DiskTier*>(opened->tier.get());
      return opened;
    };
    auto loop = makeLoop(o);
    EXPECT_NE(disk_, nullptr);
    return loop;
  }

  // runs `c` alone to the end, checks the oracle; its cached tokens.
  static int runCase(EngineLoop& loop, generation::SeqId id, const Case& c) {
    Collector col;
    EXPECT_TRUE(loop.submit(id, c.prompt, greedy(static_cast<int>(c.expected.size())),
                            col.callback()).ok());
    EXPECT_TRUE(col.wait());
    EXPECT_EQ(col.tokens, c.expected) << "request " << id;
    return col.first().num_cached_tokens;
  }

  // case 0, then two others that push its blocks out of G1 onto the disk;
  // the engine is closed (its writes complete). The disk blocks written.
  int64_t writeCase0ToDisk() {
    auto loop = open();
    runCase(*loop, 1, cases_[0]);
    runCase(*loop, 2, cases_[1]);
    runCase(*loop, 3, cases_[3]);
    EXPECT_TRUE(eventually([&] { return disk_->stats().stores.load() >= maxHit() / kBlockSize; }));
    const int64_t stored = disk_->stats().stores.load();
    loop.reset();
    return stored;
  }

  int maxHit() const { return (static_cast<int>(cases_[0].prompt.size()) - 1) / kBlockSize * kBlockSize; }

  std::string file() const { return dir_ + "/" + kvcache::DiskTier::kFileName; }

  // flips the byte at `offset` of every record on disk (a record starts with
  // the magic); the number of records changed.
  int flipInEveryRecord(size_t offset) const {
    const int fd = ::open(file().c_str(), O_RDWR);
    EXPECT_GE(fd, 0);
    int flipped = 0;
    const off_t size = lseek(fd, 0, SEEK_END);
    for (off_t at = 0; at + static_cast<off_t>(kRecordBytes) <= size; at += kRecordBytes) {
      char magic[8];
      if (pread(fd, magic, 8, at) != 8 || std::string(magic, 8) != "TNDMKVG3") continue;
      char b;
      EXPECT_EQ(pread(fd, &b, 1, at + offset), 1);
      b ^= 0x5a;
      EXPECT_EQ(pwrite(fd, &b, 1, at + offset), 1);
      ++flipped;
    }
    ::close(fd);
    return flipped;
  }

  std::string dir_ = testing::makeTempDir();
  std::vector<Case> cases_ = oracleCases(24);
  kvcache::DiskTier* disk_ = nullptr;
};

TEST_F(EngineLoopDiskTierTest, ANewEngineOnboardsTheBlocksFromDisk) {
  ASSERT_GT(writeCase0ToDisk(), 0);
  auto loop = open();
  EXPECT_GE(disk_->stats().recovered_blocks.load(), maxHit() / kBlockSize);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), maxHit());
  EXPECT_EQ(disk_->stats().loads.load(), maxHit() / kBlockSize);
  EXPECT_EQ(disk_->stats().checksum_failures.load(), 0);
}

TEST_F(EngineLoopDiskTierTest, AFlippedPayloadByteIsDetectedAndRecomputed) {
  ASSERT_GT(writeCase0ToDisk(), 0);
  ASSERT_GT(flipInEveryRecord(kvcache::kRecordHeaderBytes + 100), 0);
  auto loop = open();
  // headers are intact: the blocks are listed, their loads fail the checksum.
  EXPECT_GE(disk_->stats().recovered_blocks.load(), maxHit() / kBlockSize);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), 0);
  EXPECT_GT(disk_->stats().checksum_failures.load(), 0);
  const std::vector<kvcache::KvTierStats> tiers = loop->kvTierStats();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_GT(tiers[0].load_failures, 0u);
  EXPECT_EQ(tiers[0].onboards, 0u);
}

TEST_F(EngineLoopDiskTierTest, AFlippedHeaderByteIsDetectedAndRecomputed) {
  ASSERT_GT(writeCase0ToDisk(), 0);
  const int flipped = flipInEveryRecord(30);  // inside the block hash
  ASSERT_GT(flipped, 0);
  auto loop = open();
  EXPECT_EQ(disk_->stats().dropped_bad_header.load(), flipped);
  EXPECT_EQ(disk_->stats().recovered_blocks.load(), 0);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), 0);
}

TEST_F(EngineLoopDiskTierTest, ATruncatedFileIsDetectedAndRecomputed) {
  ASSERT_GT(writeCase0ToDisk(), 0);
  // the file ends inside the first record's payload.
  std::filesystem::resize_file(file(), kvcache::kRecordHeaderBytes + 512);
  auto loop = open();
  EXPECT_EQ(disk_->stats().dropped_torn.load(), 1);
  EXPECT_EQ(disk_->stats().recovered_blocks.load(), 0);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), 0);
}

TEST_F(EngineLoopDiskTierTest, AnotherModelsRecordsAreDetectedAndRecomputed) {
  const int64_t stored = writeCase0ToDisk();
  ASSERT_GT(stored, 0);
  auto loop = open(/*foreign=*/true);
  EXPECT_GE(disk_->stats().dropped_foreign.load(), stored);
  EXPECT_EQ(disk_->stats().recovered_blocks.load(), 0);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), 0);
}

TEST_F(EngineLoopDiskTierTest, ADiskThatRefusesWritesDisablesG3AndServingGoesOn) {
  // the file is preallocated at open; then every write past byte 0 fails
  // with EFBIG (a file-size limit, SIGXFSZ ignored): the pool's thread
  // writes, as a full disk's would fail with ENOSPC.
  auto loop = open(false, "threads");
  ASSERT_FALSE(disk_->disabled());
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old;
  limit.rlim_cur = 1;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  runCase(*loop, 1, cases_[0]);
  runCase(*loop, 2, cases_[1]);
  runCase(*loop, 3, cases_[3]);
  EXPECT_TRUE(eventually([&] { return disk_->disabled(); }));
  EXPECT_GT(disk_->stats().io_errors.load(), 0);
  EXPECT_EQ(runCase(*loop, 4, cases_[0]), 0);
  runCase(*loop, 5, cases_[1]);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  const std::vector<kvcache::KvTierStats> tiers = loop->kvTierStats();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_GT(tiers[0].write_failures, 0u);
}

}  // namespace
}  // namespace tandem::engine
