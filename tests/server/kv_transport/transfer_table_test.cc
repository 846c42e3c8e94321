// The receiver's bookkeeping alone: validation of what D announces, claims,
// per-block verification, deadlines, cancel, and exactly one verdict.
#include "server/kv_transport/transfer_table.h"

#include <atomic>
#include <future>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::kv_transport {
namespace {

class TransferTableTest : public ::testing::Test {
 protected:
  std::vector<char> memory_ = std::vector<char>(8 * 16);
  TransferTable table_{KvStorage{memory_.data(), 16, 8}};

  static ExpectedTransfer transfer(std::string id, std::vector<int32_t> dst) {
    ExpectedTransfer t;
    t.transfer_id = std::move(id);
    t.dst_block_ids = std::move(dst);
    for (size_t i = 0; i < t.dst_block_ids.size(); ++i) t.hashes.push_back(100 + i);
    return t;
  }
};

TEST_F(TransferTableTest, RefusesBadAnnouncements) {
  auto noop = [](const TransferResult&) {};
  EXPECT_EQ(table_.expect(transfer("a", {0, 8}), noop).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table_.expect(transfer("a", {1, 1}), noop).code(), absl::StatusCode::kInvalidArgument);
  ExpectedTransfer short_hashes = transfer("a", {1, 2});
  short_hashes.hashes.pop_back();
  EXPECT_EQ(table_.expect(short_hashes, noop).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(table_.expect(transfer("a", {1, 2}), noop).ok());
  EXPECT_EQ(table_.expect(transfer("a", {3}), noop).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(table_.pending(), 1u);
}

TEST_F(TransferTableTest, UnknownAndDoublyClaimedTransfersAreRefused) {
  EXPECT_EQ(table_.claim("nope", "grpc", nullptr).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(table_.expect(transfer("a", {1}), [](const TransferResult&) {}).ok());
  EXPECT_TRUE(table_.claim("a", "grpc", nullptr).ok());
  EXPECT_EQ(table_.claim("a", "shm", nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TransferTableTest, AClaimWithTheWrongTokenIsRefusedAndLeavesTheTransferPending) {
  ASSERT_TRUE(table_.expect(transfer("a", {1}), [](const TransferResult&) {}).ok());
  const std::string token = table_.token("a");
  ASSERT_EQ(token.size(), kTransferTokenBytes);
  EXPECT_EQ(table_.token("nope"), "");
  ASSERT_TRUE(table_.expect(transfer("b", {2}), [](const TransferResult&) {}).ok());
  EXPECT_NE(table_.token("b"), token);  // one per transfer
  std::string wrong = token;
  wrong[3] ^= 1;
  EXPECT_EQ(table_.claim("a", "ucx", nullptr, wrong).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(table_.claim("a", "ucx", nullptr, std::string()).status().code(),
            absl::StatusCode::kPermissionDenied);
  auto t = table_.claim("a", "ucx", nullptr, token);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->token(), token);
}

TEST(CheckSenderBlockBytesTest, ADifferentSizeIsRefusedNamingBothAndTheFlags) {
  char storage[64];
  const KvStorage s{storage, 32, 2};
  EXPECT_TRUE(checkSenderBlockBytes(32, s).ok());
  const absl::Status half = checkSenderBlockBytes(16, s);
  EXPECT_EQ(half.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(half.message(),
            "sender blocks have 16 bytes, receiver blocks 32 (do the workers' --block-size and "
            "--kv-cache-dtype agree?)");
}

TEST(TokensEqualTest, ComparesWholeNonEmptyTokens) {
  EXPECT_TRUE(tokensEqual("abc", "abc"));
  EXPECT_FALSE(tokensEqual("abc", "abd"));
  EXPECT_FALSE(tokensEqual("abc", "ab"));
  EXPECT_FALSE(tokensEqual("", ""));
}

TEST_F(TransferTableTest, VerifiedBlocksCompleteTheTransferOnce) {
  std::vector<TransferResult> results;
  ASSERT_TRUE(table_.expect(transfer("a", {5, 2}), [&](const TransferResult& r) {
    results.push_back(r);
  }).ok());
  auto t = table_.claim("a", "shm", nullptr);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->dstBlock(0), 5);
  EXPECT_TRUE((*t)->beginBlock(1, 101).ok());
  EXPECT_TRUE((*t)->endBlock(1, 9, 9).ok());
  EXPECT_EQ((*t)->beginBlock(1, 101).code(), absl::StatusCode::kInvalidArgument);  // twice
  ASSERT_EQ(results.size(), 1u);  // that failure ended it
  EXPECT_EQ(results[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*t)->finish().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(table_.pending(), 0u);
}

TEST_F(TransferTableTest, ChecksumAndHashMismatchesNameTheBlock) {
  std::promise<TransferResult> done;
  ASSERT_TRUE(table_.expect(transfer("a", {0, 1, 2}), [&](const TransferResult& r) {
    done.set_value(r);
  }).ok());
  auto t = *table_.claim("a", "grpc", nullptr);
  EXPECT_TRUE(t->beginBlock(0, 100).ok());
  EXPECT_TRUE(t->endBlock(0, 1, 1).ok());
  EXPECT_TRUE(t->beginBlock(2, 102).ok());
  absl::Status s = t->endBlock(2, 1, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  TransferResult r = done.get_future().get();
  EXPECT_EQ(r.failed_block, 2);
  EXPECT_EQ(r.blocks_received, 1);
  EXPECT_EQ(r.transport, "grpc");

  std::promise<TransferResult> done2;
  ASSERT_TRUE(table_.expect(transfer("b", {3}), [&](const TransferResult& r) {
    done2.set_value(r);
  }).ok());
  EXPECT_EQ((*table_.claim("b", "grpc", nullptr))->beginBlock(0, 555).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(done2.get_future().get().failed_block, 0);
}

TEST_F(TransferTableTest, DeadlineFailsTheTransferAndCutsTheSenderOff) {
  std::promise<TransferResult> done;
  ExpectedTransfer t = transfer("a", {1, 2});
  t.timeout = std::chrono::milliseconds(50);
  ASSERT_TRUE(table_.expect(t, [&](const TransferResult& r) { done.set_value(r); }).ok());
  std::atomic<int> aborts{0};
  auto active = *table_.claim("a", "shm", [&](const absl::Status& s) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
    ++aborts;
  });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(f.get().status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(aborts.load(), 1);
  EXPECT_EQ(active->beginBlock(0, 100).code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(TransferTableTest, CancelAndShutdownReportCancelled) {
  std::vector<absl::StatusCode> codes;
  auto record = [&](const TransferResult& r) { codes.push_back(r.status.code()); };
  {
    TransferTable table(KvStorage{memory_.data(), 16, 8});
    ASSERT_TRUE(table.expect(transfer("a", {1}), record).ok());
    ASSERT_TRUE(table.expect(transfer("b", {2}), record).ok());
    EXPECT_TRUE(table.cancel("a").ok());
    EXPECT_EQ(table.cancel("a").code(), absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(codes, (std::vector<absl::StatusCode>{absl::StatusCode::kCancelled,
                                                  absl::StatusCode::kCancelled}));
}

}  // namespace
}  // namespace tandem::kv_transport
