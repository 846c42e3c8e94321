// copyWithChecksum: the copy is exact and the checksum is XXH3-64 of the
// source, whatever the size and the destination's alignment.
#include "server/kv_transport/block_copy.h"

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/kv_transport/block_checksum.h"

namespace tandem::kv_transport {
namespace {

TEST(BlockCopyTest, CopiesExactlyAndChecksumsTheSourceAtAnySizeAndAlignment) {
  std::mt19937 rng(7);
  std::vector<char> src((1 << 20) + 300);
  for (char& c : src) c = static_cast<char>(rng());
  const size_t sizes[] = {0, 1, 63, 4096, (16 << 10) - 1, 16 << 10, (64 << 10) + 129, 1 << 20};
  for (size_t bytes : sizes) {
    for (size_t dst_shift : {0, 1, 17, 64}) {
      for (size_t src_shift : {0, 5}) {
        std::vector<char> dst(bytes + 256, 0x11);
        const char* s = src.data() + src_shift;
        char* d = dst.data() + 64 + dst_shift;
        EXPECT_EQ(copyWithChecksum(d, s, bytes), blockChecksum(s, bytes)) << bytes;
        EXPECT_EQ(std::memcmp(d, s, bytes), 0) << bytes << " +" << dst_shift;
        // nothing around the destination was touched.
        for (char* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, 0x11);
        for (char* p = d + bytes; p < dst.data() + dst.size(); ++p) ASSERT_EQ(*p, 0x11);
      }
    }
  }
}

TEST(BlockCopyTest, StreamingCopyCopiesExactly) {
  std::vector<char> src(3 << 20), dst(3 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 131 + 7);
  streamingCopy(dst.data() + 3, src.data(), src.size() - 3);
  EXPECT_EQ(std::memcmp(dst.data() + 3, src.data(), src.size() - 3), 0);
}

}  // namespace
}  // namespace tandem::kv_transport
