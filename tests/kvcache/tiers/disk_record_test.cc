// The G3 record header: exact bytes, and every way a header is refused.
#include "kvcache/tiers/disk_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/kvcache/tiers/disk_tier_test_util.h"

namespace tandem::kvcache {
namespace {

RecordHeader sampleHeader() {
  RecordHeader h;
  h.sequence = 42;
  h.hash = 0x1111222233334444ULL;
  h.parent = 0x5555666677778888ULL;
  h.fingerprint_digest = testing::testFingerprint().digest();
  h.payload_bytes = testing::kTestBlockBytes;
  h.payload_checksum = 0xabcdef;
  return h;
}

std::vector<std::byte> encoded() {
  std::vector<std::byte> page(kRecordHeaderBytes, std::byte{0x5a});
  encodeRecordHeader(sampleHeader(), testing::testFingerprint(), page);
  return page;
}

uint64_t u64At(const std::vector<std::byte>& page, size_t offset) {
  uint64_t v;
  std::memcpy(&v, page.data() + offset, 8);
  return v;
}

TEST(DiskRecordTest, RecordsArePaddedTo4KiB) {
  EXPECT_EQ(recordBytesFor(1), 8192u);
  EXPECT_EQ(recordBytesFor(4096), 8192u);
  EXPECT_EQ(recordBytesFor(4097), 12288u);
  // a stories110M block: 12 layers x 2 x 16 tokens x 768 x 4 B
  EXPECT_EQ(recordBytesFor(12 * 2 * 16 * 768 * 4), 4096u + 1179648u);
}

TEST(DiskRecordTest, HeaderHasTheDocumentedLayout) {
  const auto page = encoded();
  EXPECT_EQ(std::memcmp(page.data(), "TNDMKVG3", 8), 0);
  EXPECT_EQ(u64At(page, 8), (uint64_t{4096} << 32) | kRecordFormatVersion);
  EXPECT_EQ(u64At(page, 16), 42u);
  EXPECT_EQ(u64At(page, 24), 0x1111222233334444ULL);
  EXPECT_EQ(u64At(page, 32), 0x5555666677778888ULL);
  EXPECT_EQ(u64At(page, 40), testing::testFingerprint().digest());
  EXPECT_EQ(u64At(page, 48), testing::kTestBlockBytes);
  EXPECT_EQ(u64At(page, 56), 0xabcdefu);
  EXPECT_EQ(u64At(page, 88), 0x1234u);
  EXPECT_EQ(std::memcmp(page.data() + 96, "llama\0", 6), 0);
  for (size_t i = 136; i < kRecordHeaderBytes; ++i) ASSERT_EQ(page[i], std::byte{0}) << i;
}

TEST(DiskRecordTest, DecodesWhatItEncoded) {
  RecordHeader out;
  ASSERT_EQ(decodeRecordHeader(encoded(), testing::testFingerprint().digest(),
                               testing::kTestBlockBytes, &out),
            HeaderCheck::kValid);
  EXPECT_EQ(out.sequence, 42u);
  EXPECT_EQ(out.hash, sampleHeader().hash);
  EXPECT_EQ(out.parent, sampleHeader().parent);
  EXPECT_EQ(out.payload_checksum, 0xabcdefu);
}

TEST(DiskRecordTest, AnyFlippedByteOfTheCheckedHeaderIsCorrupt) {
  for (size_t i = 0; i < 136; ++i) {
    auto page = encoded();
    page[i] ^= std::byte{0x01};
    RecordHeader out;
    EXPECT_EQ(decodeRecordHeader(page, testing::testFingerprint().digest(),
                                 testing::kTestBlockBytes, &out),
              HeaderCheck::kCorrupt)
        << "byte " << i;
  }
}

TEST(DiskRecordTest, CopyWithChecksumCopiesAndHashesLikeTheOneShotChecksum) {
  for (size_t bytes : {size_t{1}, size_t{65536}, size_t{65537}, size_t{1179648}}) {
    const auto src = testing::blockData(bytes, bytes);
    std::vector<std::byte> dst(bytes);
    EXPECT_EQ(copyWithChecksum(dst, src), payloadChecksum(src)) << bytes;
    EXPECT_EQ(dst, src) << bytes;
  }
}

TEST(DiskRecordTest, AllZeroPageIsBlank) {
  std::vector<std::byte> page(kRecordHeaderBytes);
  RecordHeader out;
  EXPECT_EQ(decodeRecordHeader(page, 1, 1, &out), HeaderCheck::kBlank);
}

TEST(DiskRecordTest, AnotherModelsRecordIsForeign) {
  auto other = testing::testFingerprint();
  other.weights_id = 99;
  RecordHeader out;
  EXPECT_EQ(decodeRecordHeader(encoded(), other.digest(), testing::kTestBlockBytes, &out),
            HeaderCheck::kForeign);
}

TEST(DiskRecordTest, PayloadSizeOtherThanExpectedIsCorrupt) {
  RecordHeader out;
  EXPECT_EQ(decodeRecordHeader(encoded(), testing::testFingerprint().digest(), 8192, &out),
            HeaderCheck::kCorrupt);
}

TEST(ModelFingerprintTest, EveryFieldChangesTheDigest) {
  const auto base = testing::testFingerprint();
  std::vector<ModelFingerprint> variants(7, base);
  variants[0].architecture = "qwen3";
  variants[1].num_layers++;
  variants[2].num_kv_heads++;
  variants[3].head_dim++;
  variants[4].block_size++;
  variants[5].dtype = DType::kF16;
  variants[6].weights_id++;
  for (const auto& v : variants) EXPECT_NE(v.digest(), base.digest());
  EXPECT_EQ(testing::testFingerprint().digest(), base.digest());
}

}  // namespace
}  // namespace tandem::kvcache
