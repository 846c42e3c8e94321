// The UCX transport's wire as peer input: endpoint strings and messages
// are parsed with bounds, and anything malformed or oversized is refused.
#include "server/kv_transport/ucx_protocol.h"

#include <string>

#include "gtest/gtest.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport::ucx {
namespace {

UcxEndpoint sample() {
  UcxEndpoint e;
  e.worker_address = std::string("\x01\x00\xff worker", 10);
  e.rkey = std::string("\x10\x20\x00", 3);
  e.base = 0x7f0000001000;
  e.bytes = 1 << 20;
  e.boot_id = "2c1a-boot";
  e.pid = 4242;
  return e;
}

TEST(UcxEndpointTest, RoundTripsWithAndWithoutToken) {
  const UcxEndpoint e = sample();
  const std::string text = formatUcxEndpoint(e);
  ASSERT_EQ(text.rfind("ucx://", 0), 0u);
  auto parsed = parseUcxEndpoint(text.substr(6));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->worker_address, e.worker_address);
  EXPECT_EQ(parsed->rkey, e.rkey);
  EXPECT_EQ(parsed->base, e.base);
  EXPECT_EQ(parsed->bytes, e.bytes);
  EXPECT_EQ(parsed->boot_id, e.boot_id);
  EXPECT_EQ(parsed->pid, 4242u);
  EXPECT_TRUE(parsed->token.empty());

  const std::string token(kTransferTokenBytes, '\x5a');
  auto with_token = parseUcxEndpoint(text.substr(6) + tokenParam(token));
  ASSERT_TRUE(with_token.ok()) << with_token.status();
  EXPECT_EQ(with_token->token, token);
}

TEST(UcxEndpointTest, WithoutRkeyMeansNoRma) {
  UcxEndpoint e = sample();
  e.rkey.clear();
  auto parsed = parseUcxEndpoint(formatUcxEndpoint(e).substr(6));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->rkey.empty());
}

TEST(UcxEndpointTest, RefusesMalformedOrOversizedFields) {
  const std::string ok = formatUcxEndpoint(sample()).substr(6);
  for (const std::string& bad : {
           std::string(""),                                          // no address
           std::string("0g?boot_id=x"),                              // not hex
           std::string("abc?boot_id=x"),                             // odd length
           std::string(2 * kMaxWorkerAddressBytes + 2, 'a'),         // address too long
           std::string("0102?rkey=01&boot_id=x"),                    // rkey without base/bytes
           std::string("0102?rkey=01&base=10&bytes=18446744073709551615"),  // wraps
           std::string("0102?boot_id=x&boot_id=y"),                  // repeated
           std::string("0102?colour=red"),                           // unknown
           std::string("0102?boot_id"),                              // no value
           std::string("0102?token=0102"),                           // short token
           std::string("0102?pid=-1"),                               // not a pid
           "0102?boot_id=" + std::string(kMaxBootIdBytes + 1, 'b'),  // boot id too long
           "0102?rkey=" + std::string(2 * kMaxRkeyBytes + 2, 'a') + "&base=1&bytes=1",
       }) {
    EXPECT_FALSE(parseUcxEndpoint(bad).ok()) << bad.substr(0, 80);
  }
  EXPECT_TRUE(parseUcxEndpoint(ok).ok());
}

TEST(UcxRangeTest, BlockRangesAreCheckedWithoutOverflow) {
  EXPECT_TRUE(rangeInside(0, 16, 16));
  EXPECT_TRUE(rangeInside(16, 16, 32));
  EXPECT_FALSE(rangeInside(17, 16, 32));
  EXPECT_FALSE(rangeInside(33, 0, 32));
  EXPECT_FALSE(rangeInside(UINT64_MAX - 8, 16, UINT64_MAX));
  EXPECT_FALSE(rangeInside(8, UINT64_MAX, 32));
}

TEST(UcxMessagesTest, RoundTripAndRefuseTruncatedOrTrailingBytes) {
  OpenMessage open{7, 4096, "xfer-1", std::string(kTransferTokenBytes, 't'), "addr", "boot", 99};
  const std::string o = encode(open);
  auto o2 = decodeOpen(o);
  ASSERT_TRUE(o2.has_value());
  EXPECT_EQ(o2->transfer_id, "xfer-1");
  EXPECT_EQ(o2->pid, 99u);
  EXPECT_FALSE(decodeOpen(o.substr(0, o.size() - 1)).has_value());
  EXPECT_FALSE(decodeOpen(o + "x").has_value());
  OpenMessage long_id = open;
  long_id.transfer_id = std::string(kMaxTransferIdBytes + 1, 'i');
  EXPECT_FALSE(decodeOpen(encode(long_id)).has_value());

  OpenedMessage opened{7, 0, "", 0xabc, {0, 4096, 8192}};
  auto opened2 = decodeOpened(encode(opened), 3);
  ASSERT_TRUE(opened2.has_value());
  EXPECT_EQ(opened2->offsets, (std::vector<uint64_t>{0, 4096, 8192}));
  EXPECT_FALSE(decodeOpened(encode(opened), 2).has_value());  // more blocks than allowed

  BlocksMessage blocks{0xabc, {{1, 2, 3}, {4, 5, 6}}};
  auto blocks2 = decodeBlocks(encode(blocks));
  ASSERT_TRUE(blocks2.has_value());
  ASSERT_EQ(blocks2->blocks.size(), 2u);
  EXPECT_EQ(blocks2->blocks[1].checksum, 6u);
  EXPECT_FALSE(decodeBlocks(encode(blocks).substr(0, 20)).has_value());

  auto header = decodeDataHeader(encode(DataHeader{0xabc, {3, 4, 5}}));
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->block.index, 3);

  auto finish = decodeFinish(encode(FinishMessage{0xabc, "tok"}));
  ASSERT_TRUE(finish.has_value());
  EXPECT_EQ(finish->token, "tok");
  EXPECT_FALSE(decodeFinish(encode(FinishMessage{1, std::string(kTransferTokenBytes + 1, 't')})).has_value());

  auto result = decodeResult(encode(ResultMessage{7, 15, 2, "data loss"}));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->failed_block, 2);
  EXPECT_EQ(decodeAbort(encodeAbort(0xabc)), 0xabcu);
}

}  // namespace
}  // namespace tandem::kv_transport::ucx
