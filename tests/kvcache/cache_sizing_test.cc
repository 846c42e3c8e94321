#include "kvcache/cache_sizing.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

class CacheSizingTest : public ::testing::Test {
 protected:
  // 2 layers, 4 kv heads of 8 dims, 16-token blocks, f16:
  // 16 * 4 * 8 * 2 (k, v) * 2 layers * 2 bytes = 4096 bytes a block.
  KvLayout layout_{.num_layers = 2, .num_kv_heads = 4, .head_dim = 8,
                   .block_size = 16, .dtype = DType::kF16};
};

TEST_F(CacheSizingTest, BudgetHoldsWholeBlocksOnly) {
  ASSERT_EQ(layout_.blockBytes(), 4096u);
  EXPECT_EQ(blocksForBudget(4096 * 10 + 4095, layout_), 10);
  EXPECT_EQ(blocksForBudget(4095, layout_), 0);
}

TEST_F(CacheSizingTest, ParsesMemInfoFieldsInKilobytes) {
  const char* text =
      "MemTotal:       16318480 kB\n"
      "MemFree:         1000 kB\n"
      "MemAvailable:    8000 kB\n";
  EXPECT_EQ(*parseMemInfoBytes(text, "MemAvailable"), 8000u * 1024);
  EXPECT_EQ(*parseMemInfoBytes(text, "MemFree"), 1000u * 1024);
  EXPECT_EQ(parseMemInfoBytes(text, "SwapTotal").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(parseMemInfoBytes("MemFree: lots kB\n", "MemFree").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CacheSizingTest, FractionOfAvailableMemoryFromMeminfoFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tandem_meminfo_" + std::to_string(::getpid()));
  {
    std::ofstream out(path);
    out << "MemTotal: 9999 kB\nMemFree: 100 kB\nMemAvailable: 400 kB\n";
  }
  // 400 kB * 0.5 = 204800 bytes = 50 blocks of 4096.
  EXPECT_EQ(*blocksForMemoryFraction(0.5, layout_, path.string()), 50);
  {
    std::ofstream out(path);
    out << "MemTotal: 9999 kB\nMemFree: 100 kB\n";
  }
  EXPECT_EQ(*blocksForMemoryFraction(1.0, layout_, path.string()), 25);
  std::filesystem::remove(path);
  EXPECT_EQ(blocksForMemoryFraction(0.0, layout_, path.string()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(blocksForMemoryFraction(0.5, layout_, path.string()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CacheSizingTest, ReadsTheRealProcMeminfo) {
  auto blocks = blocksForMemoryFraction(0.01, layout_);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  EXPECT_GT(*blocks, 0);
}

}  // namespace
}  // namespace tandem::kvcache
