#include "server/kv_transport/transfer_table.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/kv_transport/shm_region.h"

namespace tandem::kv_transport {

using Clock = std::chrono::steady_clock;

namespace {

struct Entry {
  ExpectedTransfer spec;
  std::string token;
  TransferDoneFn done;
  Clock::time_point deadline;
  TimerQueue::TimerId expiry = TimerQueue::kNoTimer;  // fails it at `deadline`
  bool claimed = false;
  bool ended = false;
  std::string transport;
  AbortFn on_abort;
  std::vector<uint8_t> received;  // per block: 0 none, 1 begun, 2 verified
  int verified = 0;
  uint64_t bytes = 0;
  absl::Status final_status;
};

std::string randomToken() {
  std::string t(kTransferTokenBytes, '\0');
  for (size_t i = 0; i < t.size(); i += 8) {
    const uint64_t v = randomU64();
    std::memcpy(t.data() + i, &v, std::min<size_t>(8, t.size() - i));
  }
  return t;
}

}  // namespace

absl::Status checkSenderBlockBytes(uint64_t sender_block_bytes, const KvStorage& storage) {
  if (sender_block_bytes == storage.block_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("sender blocks have ", sender_block_bytes, " bytes, receiver blocks ",
                                                 storage.block_bytes,
                                                 " (do the workers' --block-size and --kv-cache-dtype agree?)"));
}

bool tokensEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct TransferTable::State {
  KvStorage storage;
  mutable std::mutex mu;
  // the table's; null once it is being destroyed (handles outlive it).
  TimerQueue* timers = nullptr;
  bool stopping = false;
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> pending;

  // ends `e` with `status` unless it already ended. Must be called without
  // `mu` held: the callbacks run outside the lock so they may re-enter.
  // `external` says the transport did not cause it, so it must be told.
  void complete(const std::shared_ptr<Entry>& e, absl::Status status, int failed_block,
                bool external) {
    TransferDoneFn done;
    AbortFn abort;
    TransferResult result;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (e->ended) return;
      e->ended = true;
      e->final_status = status;
      pending.erase(e->spec.transfer_id);
      if (timers != nullptr) timers->cancel(e->expiry);
      done = std::move(e->done);
      if (external) abort = std::move(e->on_abort);
      result.transfer_id = e->spec.transfer_id;
      result.status = std::move(status);
      result.failed_block = failed_block;
      result.blocks_received = e->verified;
      result.bytes_received = e->bytes;
      result.transport = e->transport;
    }
    if (abort) abort(result.status);
    if (done) done(result);
  }
};

TransferTable::TransferTable(KvStorage storage) : state_(std::make_shared<State>()) {
  state_->storage = storage;
  state_->timers = &timers_;
}

TransferTable::~TransferTable() {
  std::vector<std::shared_ptr<Entry>> left;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
    state_->timers = nullptr;
    for (auto& [id, e] : state_->pending) left.push_back(e);
  }
  timers_.stop();  // an expiry in progress ends first
  for (auto& e : left) {
    state_->complete(e, absl::CancelledError("the KV receiver shut down"), -1, true);
  }
}

const KvStorage& TransferTable::storage() const { return state_->storage; }

absl::Status TransferTable::expect(ExpectedTransfer transfer, TransferDoneFn done) {
  const KvStorage& s = state_->storage;
  if (transfer.transfer_id.empty()) return absl::InvalidArgumentError("empty transfer id");
  if (transfer.dst_block_ids.size() != transfer.hashes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("transfer ", transfer.transfer_id, " has ",
                                                   transfer.dst_block_ids.size(), " blocks but ",
                                                   transfer.hashes.size(), " hashes"));
  }
  absl::flat_hash_set<int32_t> seen;
  for (int32_t id : transfer.dst_block_ids) {
    if (id < 0 || id >= s.num_blocks) {
      return absl::InvalidArgumentError(
          absl::StrCat("block id ", id, " is outside the KV storage (", s.num_blocks, " blocks)"));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat("block id ", id, " appears twice"));
    }
  }
  auto e = std::make_shared<Entry>();
  e->deadline = Clock::now() + transfer.timeout;
  e->received.assign(transfer.dst_block_ids.size(), 0);
  e->token = randomToken();
  e->spec = std::move(transfer);
  e->done = std::move(done);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->stopping) return absl::CancelledError("the KV receiver is shutting down");
    if (!state_->pending.emplace(e->spec.transfer_id, e).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("transfer ", e->spec.transfer_id, " is already pending"));
    }
    // set under mu, so an early end of the transfer sees it to cancel it.
    e->expiry = state_->timers->runAt(
        e->deadline, [state = state_.get(), weak = std::weak_ptr<Entry>(e)] {
          std::shared_ptr<Entry> expired = weak.lock();
          if (expired == nullptr) return;
          state->complete(expired,
                          absl::DeadlineExceededError(absl::StrCat(
                              "transfer ", expired->spec.transfer_id, " did not complete in ",
                              expired->spec.timeout.count(), " ms")),
                          -1, true);
        });
  }
  return absl::OkStatus();
}

absl::Status TransferTable::cancel(const std::string& transfer_id) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->pending.find(transfer_id);
    if (it == state_->pending.end()) {
      return absl::NotFoundError(absl::StrCat("no pending transfer ", transfer_id));
    }
    e = it->second;
  }
  state_->complete(e, absl::CancelledError(absl::StrCat("transfer ", transfer_id, " cancelled")),
                   -1, true);
  return absl::OkStatus();
}

absl::StatusOr<ActiveTransferPtr> TransferTable::claim(const std::string& transfer_id,
                                                       std::string transport, AbortFn on_abort,
                                                       std::optional<std::string_view> token) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->pending.find(transfer_id);
  if (it == state_->pending.end()) {
    return absl::NotFoundError(absl::StrCat("transfer ", transfer_id, " is not expected here"));
  }
  Entry& e = *it->second;
  if (token.has_value() && !tokensEqual(*token, e.token)) {
    return absl::PermissionDeniedError(
        absl::StrCat("wrong token for transfer ", transfer_id));
  }
  if (e.claimed) {
    return absl::FailedPreconditionError(
        absl::StrCat("transfer ", transfer_id, " is already being pushed over ", e.transport));
  }
  e.claimed = true;
  e.transport = std::move(transport);
  e.on_abort = std::move(on_abort);
  return std::make_shared<ActiveTransfer>(state_, it->second);
}

std::string TransferTable::token(const std::string& transfer_id) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->pending.find(transfer_id);
  return it == state_->pending.end() ? std::string() : it->second->token;
}

size_t TransferTable::pending() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->pending.size();
}

// --- ActiveTransfer ---

namespace {
Entry& entryOf(const std::shared_ptr<void>& p) { return *static_cast<Entry*>(p.get()); }
}  // namespace

ActiveTransfer::ActiveTransfer(std::shared_ptr<TransferTable::State> state,
                               std::shared_ptr<void> entry)
    : state_(std::move(state)), entry_(std::move(entry)) {}

const std::string& ActiveTransfer::id() const { return entryOf(entry_).spec.transfer_id; }

int ActiveTransfer::numBlocks() const {
  return static_cast<int>(entryOf(entry_).spec.dst_block_ids.size());
}

int32_t ActiveTransfer::dstBlock(int index) const {
  return entryOf(entry_).spec.dst_block_ids[index];
}

absl::Status ActiveTransfer::beginBlock(int index, kvcache::BlockHash hash) {
  Entry& e = entryOf(entry_);
  absl::Status error;
  int failed = -1;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (e.ended) return e.final_status.ok() ? absl::FailedPreconditionError("transfer ended")
                                            : e.final_status;
    if (index < 0 || index >= numBlocks()) {
      error = absl::InvalidArgumentError(absl::StrCat("transfer ", e.spec.transfer_id,
                                                      ": block index ", index, " out of range [0, ",
                                                      numBlocks(), ")"));
    } else if (e.received[index] != 0) {
      error = absl::InvalidArgumentError(
          absl::StrCat("transfer ", e.spec.transfer_id, ": block ", index, " sent twice"));
    } else if (e.spec.hashes[index] != hash) {
      failed = index;
      error = absl::DataLossError(absl::StrCat("transfer ", e.spec.transfer_id, ": block ", index,
                                               " has hash ", hash, ", expected ",
                                               e.spec.hashes[index]));
    } else {
      e.received[index] = 1;
      return absl::OkStatus();
    }
  }
  state_->complete(std::static_pointer_cast<Entry>(entry_), error, failed, false);
  return error;
}

absl::Status ActiveTransfer::endBlock(int index, uint64_t sent, uint64_t computed) {
  Entry& e = entryOf(entry_);
  absl::Status error;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (e.ended) return e.final_status.ok() ? absl::FailedPreconditionError("transfer ended")
                                            : e.final_status;
    if (index < 0 || index >= numBlocks() || e.received[index] != 1) {
      error = absl::InvalidArgumentError(
          absl::StrCat("transfer ", e.spec.transfer_id, ": block ", index, " was not begun"));
    } else if (sent != computed) {
      error = absl::DataLossError(absl::StrCat(
          "transfer ", e.spec.transfer_id, ": block ", index, " (dst block ",
          e.spec.dst_block_ids[index], ") failed its checksum: sent ", sent, ", stored ", computed));
    } else {
      e.received[index] = 2;
      ++e.verified;
      e.bytes += state_->storage.block_bytes;
      return absl::OkStatus();
    }
  }
  state_->complete(std::static_pointer_cast<Entry>(entry_), error,
                   error.code() == absl::StatusCode::kDataLoss ? index : -1, false);
  return error;
}

absl::Status ActiveTransfer::finish() {
  Entry& e = entryOf(entry_);
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (e.ended) return e.final_status.ok() ? absl::FailedPreconditionError("transfer ended")
                                            : e.final_status;
    if (e.verified != numBlocks()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("transfer ", e.spec.transfer_id, " finished with ", numBlocks() - e.verified,
                       " of ", numBlocks(), " blocks missing"));
    }
  }
  state_->complete(std::static_pointer_cast<Entry>(entry_), status, -1, false);
  return status;
}

void ActiveTransfer::fail(const absl::Status& status) {
  state_->complete(std::static_pointer_cast<Entry>(entry_), status, -1, false);
}

const std::string& ActiveTransfer::token() const { return entryOf(entry_).token; }

absl::Status ActiveTransfer::status() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return entryOf(entry_).final_status;
}

}  // namespace tandem::kv_transport
