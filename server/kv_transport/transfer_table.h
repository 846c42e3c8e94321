// The receiving side's bookkeeping, shared by every KvReceiver
// implementation: which transfers D expects, which sender is pushing each,
// which blocks arrived and verified, deadlines, and the one completion call
// per transfer. Transports only move bytes and report what they saw.
// Deadlines are one-shot timers on the table's own TimerQueue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/timer_queue.h"
#include "server/kv_transport/kv_transport.h"

namespace tandem::kv_transport {

// D's KV storage as a receiver sees it: num_blocks blocks of block_bytes
// bytes, block id at data + id * block_bytes (host memory).
struct KvStorage {
  void* data = nullptr;
  size_t block_bytes = 0;
  int num_blocks = 0;

  char* block(int32_t id) const {
    return static_cast<char*>(data) + static_cast<size_t>(id) * block_bytes;
  }
};

// bytes of the random token each expected transfer gets (see
// TransferTable::token).
inline constexpr size_t kTransferTokenBytes = 16;

// whether two tokens are equal (and not empty), in time independent of
// where they differ.
bool tokensEqual(std::string_view a, std::string_view b);

// every receiver's check of a sender's block size against its storage's:
// InvalidArgument naming both sizes and the flags that set them when they
// differ (a worker's --block-size and --kv-cache-dtype).
absl::Status checkSenderBlockBytes(uint64_t sender_block_bytes, const KvStorage& storage);

// called when a claimed transfer ends for a reason outside its transport
// (timeout, cancel, shutdown), so the transport cuts its sender off.
using AbortFn = std::function<void(const absl::Status&)>;

class ActiveTransfer;
using ActiveTransferPtr = std::shared_ptr<ActiveTransfer>;

class TransferTable {
 public:
  explicit TransferTable(KvStorage storage);
  // completes every pending transfer with Cancelled.
  ~TransferTable();
  TransferTable(const TransferTable&) = delete;
  TransferTable& operator=(const TransferTable&) = delete;

  const KvStorage& storage() const;

  // see KvReceiver::expect.
  absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done);
  // see KvReceiver::cancel.
  absl::Status cancel(const std::string& transfer_id);

  // a sender starts pushing `transfer_id` over `transport`. NotFound when no
  // such transfer is pending (unknown, or already ended); FailedPrecondition
  // when another sender already claimed it; PermissionDenied when `token`
  // is given and is not the transfer's (the transfer stays pending). A
  // transport whose peers are not authenticated otherwise passes the token
  // the sender presented. `on_abort` is called at most once, outside any
  // lock, if the transfer ends other than through the returned handle.
  absl::StatusOr<ActiveTransferPtr> claim(const std::string& transfer_id, std::string transport,
                                          AbortFn on_abort,
                                          std::optional<std::string_view> token = std::nullopt);

  // the random token (kTransferTokenBytes) made for pending transfer
  // `transfer_id` at expect(), or "" when it is not pending. D hands it to
  // P only through an authenticated channel (the endpoint of the Prefill
  // RPC, KvReceiver::transferEndpoint).
  std::string token(const std::string& transfer_id) const;

  // transfers pending (expected or in flight).
  size_t pending() const;

  struct State;  // shared with the handles, which may outlive the table

 private:
  std::shared_ptr<State> state_;
  TimerQueue timers_{"kv-expiry"};  // fails transfers at their deadline
};

// one claimed transfer: the transport reports each block's arrival through
// it. Every method is thread-safe; once the transfer ended (here, by a
// timeout or a cancel) they return its final status and change nothing.
class ActiveTransfer {
 public:
  ActiveTransfer(std::shared_ptr<TransferTable::State> state, std::shared_ptr<void> entry);

  const std::string& id() const;
  int numBlocks() const;
  // D's block for transfer index `index` (which must be in range).
  int32_t dstBlock(int index) const;

  // checks the start of block `index` before its bytes are stored: the index
  // is in range and not yet received, and `hash` is what D expects. Fails the
  // transfer (InvalidArgument, or DataLoss for a wrong hash) otherwise.
  absl::Status beginBlock(int index, kvcache::BlockHash hash);

  // block `index` is stored: `computed` is the checksum of the stored bytes,
  // `sent` the sender's. DataLoss naming the block (and the transfer fails)
  // when they differ.
  absl::Status endBlock(int index, uint64_t sent, uint64_t computed);

  // the sender says it is done: OK (and D's done fires with OK) when every
  // block verified; FailedPrecondition naming how many are missing otherwise.
  absl::Status finish();

  // ends the transfer with `status` (first end wins); e.g. the sender's
  // connection broke.
  void fail(const absl::Status& status);

  // OK while the transfer runs or after it succeeded; its error once failed.
  absl::Status status() const;

  // the transfer's token (TransferTable::token).
  const std::string& token() const;

 private:
  std::shared_ptr<TransferTable::State> state_;
  std::shared_ptr<void> entry_;
};

}  // namespace tandem::kv_transport
