#include "kvcache/tiers/disk_tier.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/thread_disk_io.h"
#include "kvcache/tiers/uring_disk_io.h"

namespace tandem::kvcache {
namespace {

constexpr int kMaxIoThreads = 8;

int64_t nowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void logLine(const std::string& line) { std::fprintf(stderr, "kv disk tier: %s\n", line.c_str()); }

std::string ioErrorText(int64_t result, size_t expected) {
  if (result < 0) return std::strerror(static_cast<int>(-result));
  return absl::StrCat("short transfer (", result, " of ", expected, " bytes)");
}

std::string hashText(BlockHash hash) { return absl::StrCat(absl::Hex(hash, absl::kZeroPad16)); }

void runDeferred(std::vector<std::pair<TierDone, absl::Status>>& deferred) {
  for (auto& [done, status] : deferred) done(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DiskTier>> DiskTier::open(DiskTierOptions options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("kv disk tier: no directory");
  if (options.block_bytes == 0) return absl::InvalidArgumentError("kv disk tier: block_bytes is 0");
  if (options.queue_depth < 1) return absl::InvalidArgumentError("kv disk tier: queue depth below 1");
  if (options.min_hits < 1) return absl::InvalidArgumentError("kv disk tier: min hits below 1");
  const size_t record = recordBytesFor(options.block_bytes);
  const uint64_t slots = options.capacity_bytes / record;
  if (slots == 0) {
    return absl::InvalidArgumentError(absl::StrCat("kv disk tier: ", options.capacity_bytes,
                                                   " bytes hold no record of ", record, " bytes"));
  }
  if (slots > static_cast<uint64_t>(INT32_MAX)) {
    return absl::InvalidArgumentError("kv disk tier: more than 2^31 records");
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(std::move(options)));
  tier->openFileAndIo();
  if (!tier->disabled()) tier->scan();
  return tier;
}

DiskTier::DiskTier(DiskTierOptions options)
    : options_(std::move(options)),
      fingerprint_digest_(options_.fingerprint.digest()),
      record_bytes_(recordBytesFor(options_.block_bytes)),
      num_slots_(static_cast<int>(options_.capacity_bytes / record_bytes_)),
      slots_(num_slots_),
      store_(num_slots_, KvTier::kDisk, SlotStore::Start::kEmpty),
      offers_(std::clamp<size_t>(static_cast<size_t>(num_slots_) * 4, 4096, size_t{1} << 20)) {
  stats_.capacity_blocks = num_slots_;
}

DiskTier::~DiskTier() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  // completions still run (and may start waiting loads) until the engine drains.
  if (io_) io_->shutdown();
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    for (auto& load : waiting_loads_) {
      deferred.emplace_back(std::move(load.done), absl::UnavailableError("kv disk tier: closing"));
    }
    waiting_loads_.clear();
  }
  runDeferred(deferred);
}

void DiskTier::openFileAndIo() {
  const uint64_t file_bytes = static_cast<uint64_t>(num_slots_) * record_bytes_;
  auto file = DiskFile::open(options_.dir, kFileName, file_bytes, /*want_direct=*/true,
                             options_.lock_wait);
  if (!file.ok()) {
    Deferred unused;
    std::lock_guard lock(mu_);
    disableLocked(std::string(file.status().message()), unused);
    return;
  }
  file_ = std::move(*file);
  if (!file_.direct()) {
    stats_.direct_fallback = true;
    logLine(absl::StrCat("O_DIRECT refused on ", file_.path(), " (", file_.directRefusal(),
                         "), using buffered I/O"));
  }
  if (file_.sparse()) {
    logLine(absl::StrCat(file_.path(), ": the file system cannot preallocate (fallocate "
                         "unsupported); the file is sparse and a full disk disables G3 mid-run"));
  }
  buffers_ = std::make_unique<AlignedBufferPool>(options_.queue_depth, record_bytes_);
  for (int i = options_.queue_depth - 1; i >= 0; --i) free_buffers_.push_back(i);
  if (options_.io == DiskIoMode::kUring) {
    auto uring = UringDiskIo::create(file_.fd(), *buffers_, options_.queue_depth);
    if (uring.ok()) {
      if (!(*uring)->registrationNote().empty()) {
        logLine(absl::StrCat("io_uring: ", (*uring)->registrationNote()));
      }
      io_ = std::move(*uring);
    } else {
      stats_.uring_fallback = true;
      logLine(absl::StrCat("io_uring unavailable (", std::string(uring.status().message()), "), using threads"));
    }
  }
  if (!io_) {
    io_ = std::make_unique<ThreadDiskIo>(file_.fd(), *buffers_,
                                         std::min(options_.queue_depth, kMaxIoThreads));
  }
  stats_.uring = io_->name() == "uring";
  stats_.direct_io = file_.direct();
  io_mode_name_ = absl::StrCat(std::string(io_->name()), file_.direct() ? "+direct" : "+buffered");
}

void DiskTier::scan() {
  struct Found {
    int slot;
    RecordHeader header;
  };
  std::vector<Found> found;
  const uint64_t size = file_.sizeAtOpen();
  const bool whole = options_.verify_at_open;
  const size_t len = whole ? record_bytes_ : kRecordHeaderBytes;
  // slots whose header page lies inside the file as it was found.
  const int count = size < kRecordHeaderBytes
                        ? 0
                        : static_cast<int>(std::min<uint64_t>(
                              num_slots_, (size - kRecordHeaderBytes) / record_bytes_ + 1));
  const int depth = buffers_->count();
  std::mutex m;
  std::condition_variable cv;
  std::vector<int64_t> results(depth);
  bool logged_foreign = false;
  for (int first = 0; first < count; first += depth) {
    const int n = std::min(depth, count - first);
    int pending = n;
    for (int j = 0; j < n; ++j) {
      io_->read(j, len, slotOffset(first + j), [&, j](int64_t result) {
        std::lock_guard lock(m);
        results[j] = result;
        if (--pending == 0) cv.notify_all();
      });
    }
    {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return pending == 0; });
    }
    for (int j = 0; j < n; ++j) {
      const int slot = first + j;
      if (results[j] < 0) {
        stats_.io_errors++;
        Deferred unused;
        std::lock_guard lock(mu_);
        disableLocked(absl::StrCat("read error scanning ", file_.path(), ": ",
                                   ioErrorText(results[j], len)),
                      unused);
        return;
      }
      if (results[j] < static_cast<int64_t>(kRecordHeaderBytes)) continue;
      const std::span<const std::byte> record = buffers_->buffer(j);
      RecordHeader header;
      switch (decodeRecordHeader(record.first(kRecordHeaderBytes), fingerprint_digest_,
                                 options_.block_bytes, &header)) {
        case HeaderCheck::kBlank:
          continue;
        case HeaderCheck::kCorrupt:
          stats_.dropped_bad_header++;
          continue;
        case HeaderCheck::kForeign:
          stats_.dropped_foreign++;
          if (!logged_foreign) {
            logLine(absl::StrCat(file_.path(), " holds records of another model (fingerprint ",
                                 hashText(header.fingerprint_digest), ", this model's ",
                                 hashText(fingerprint_digest_), "): dropping them"));
            logged_foreign = true;
          }
          continue;
        case HeaderCheck::kValid:
          break;
      }
      if (slotOffset(slot) + record_bytes_ > size) {
        stats_.dropped_torn++;
        continue;
      }
      if (whole && (results[j] < static_cast<int64_t>(record_bytes_) ||
                    payloadChecksum(record.subspan(kRecordHeaderBytes, options_.block_bytes)) !=
                        header.payload_checksum)) {
        stats_.dropped_bad_payload++;
        continue;
      }
      found.push_back({slot, header});
    }
  }

  // oldest write first: the LRU order and the order recovered() republishes in;
  // a hash found twice (stored again after a lazy removal) keeps its newest record.
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.header.sequence < b.header.sequence; });
  std::lock_guard lock(mu_);
  for (const Found& f : found) {
    if (const std::optional<int> older = store_.find(f.header.hash)) {
      slots_[*older].state = SlotState::kFree;
      store_.pin(*older);
    }
    store_.reindex(f.header.hash, f.slot);
    Slot& s = slots_[f.slot];
    s.state = SlotState::kReady;
    s.hash = f.header.hash;
    s.parent = f.header.parent;
    store_.makeEvictable(f.slot);
    next_sequence_ = std::max(next_sequence_, f.header.sequence + 1);
  }
  for (int slot = 0; slot < num_slots_; ++slot) {
    if (slots_[slot].state == SlotState::kFree) store_.release(slot);
  }
  for (int slot : store_.lruOrder()) recovered_.emplace_back(slots_[slot].hash, slots_[slot].parent);
  stats_.recovered_blocks = static_cast<int64_t>(recovered_.size());
  stats_.used_blocks = static_cast<int64_t>(recovered_.size());
  logLine(absl::StrCat(file_.path(), ": ", num_slots_, " records of ", record_bytes_, " bytes, ",
                       io_mode_name_, "; recovered ", recovered_.size(), " blocks, dropped ",
                       stats_.dropped_torn.load(), " torn, ", stats_.dropped_foreign.load(),
                       " of another model, ",
                       stats_.dropped_bad_header.load() + stats_.dropped_bad_payload.load(),
                       " corrupt"));
}

int64_t DiskTier::numBlocks() const { return stats_.used_blocks.load(); }

bool DiskTier::contains(BlockHash hash) const {
  std::lock_guard lock(mu_);
  const std::optional<int> slot = store_.find(hash);
  return slot && slots_[*slot].state == SlotState::kReady;
}

std::vector<std::pair<BlockHash, BlockHash>> DiskTier::recovered() const {
  std::lock_guard lock(mu_);
  return recovered_;
}

bool DiskTier::disabled() const { return stats_.disabled.load(); }

std::string DiskTier::disabledReason() const {
  std::lock_guard lock(mu_);
  return disabled_reason_;
}

void DiskTier::setEventListener(KvEventListener* listener) {
  std::lock_guard lock(mu_);
  store_.setEventListener(listener);
}

bool DiskTier::store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
                     TierDone done) {
  if (data.size() != options_.block_bytes) return false;
  int slot = -1;
  int buffer = -1;
  RecordHeader header;
  {
    std::lock_guard lock(mu_);
    if (disabled_ || closing_) return false;
    if (const std::optional<int> held = store_.find(hash)) {
      Slot& s = slots_[*held];
      if (s.state != SlotState::kReady) return false;  // its write is in flight
      if (s.pins == 0) store_.touch(*held);
    } else {
      if (options_.min_hits > 1 && offers_.offer(hash) < options_.min_hits) {
        stats_.admission_rejections++;
        return false;
      }
      if (free_buffers_.empty()) {
        stats_.backpressure_rejections++;
        return false;
      }
      slot = takeSlotLocked();
      if (slot < 0) {  // every block is being read or written
        stats_.backpressure_rejections++;
        return false;
      }
      buffer = free_buffers_.back();
      free_buffers_.pop_back();
      Slot& s = slots_[slot];
      s.state = SlotState::kWriting;
      s.hash = hash;
      s.parent = parent;
      s.doomed = false;
      store_.reindex(hash, slot);
      header.sequence = next_sequence_++;
    }
  }
  if (slot < 0) {
    done(absl::OkStatus());
    return true;
  }
  // the record, built off the lock: only this store owns the slot and the buffer.
  const std::span<std::byte> record = buffers_->buffer(buffer);
  header.hash = hash;
  header.parent = parent;
  header.fingerprint_digest = fingerprint_digest_;
  header.payload_bytes = options_.block_bytes;
  header.payload_checksum =
      copyWithChecksum(record.subspan(kRecordHeaderBytes, data.size()), data);
  encodeRecordHeader(header, options_.fingerprint, record);
  std::memset(record.data() + kRecordHeaderBytes + data.size(), 0,
              record_bytes_ - kRecordHeaderBytes - data.size());
  const int64_t start = nowMicros();
  io_->write(buffer, record_bytes_, slotOffset(slot),
             [this, slot, buffer, start, done = std::move(done)](int64_t result) mutable {
               onWriteDone(slot, buffer, result, start, std::move(done));
             });
  return true;
}

int DiskTier::takeSlotLocked() {
  if (auto free = store_.takeFree()) return *free;
  auto victim = store_.popLeastRecent();
  if (!victim) return -1;
  Slot& s = slots_[*victim];
  store_.unindex(s.hash);
  s.state = SlotState::kFree;
  stats_.evictions++;
  stats_.used_blocks--;
  store_.announceRemoved(s.hash);
  return *victim;
}

void DiskTier::onWriteDone(int slot, int buffer, int64_t result, int64_t start_us, TierDone done) {
  stats_.write_latency.record(nowMicros() - start_us);
  absl::Status status;
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    const bool ok = result == static_cast<int64_t>(record_bytes_);
    if (!ok) {
      stats_.io_errors++;
      const std::string what = absl::StrCat("write of ", record_bytes_, " bytes at offset ",
                                            slotOffset(slot), " of ", file_.path(), " failed: ",
                                            ioErrorText(result, record_bytes_));
      status = absl::UnavailableError(absl::StrCat("kv disk tier: ", what));
      disableLocked(what, deferred);
    }
    if (ok && !s.doomed && !disabled_) {
      s.state = SlotState::kReady;
      store_.makeEvictable(slot);
      stats_.stores++;
      stats_.bytes_written += static_cast<int64_t>(record_bytes_);
      stats_.used_blocks++;
      store_.announceStored(s.hash, s.parent);
    } else {
      if (store_.find(s.hash) == slot) store_.unindex(s.hash);
      freeSlotLocked(slot);
      if (ok && disabled_) status = absl::UnavailableError("kv disk tier: disabled");
    }
    releaseBufferLocked(buffer);
  }
  runDeferred(deferred);
  done(status);
}

void DiskTier::load(BlockHash hash, std::span<std::byte> dst, TierDone done) {
  stats_.lookups++;
  if (dst.size() != options_.block_bytes) {
    done(absl::InvalidArgumentError(absl::StrCat("kv disk tier: load into ", dst.size(),
                                                 " bytes, blocks are ", options_.block_bytes)));
    return;
  }
  absl::Status refusal;
  {
    std::lock_guard lock(mu_);
    const std::optional<int> slot = store_.find(hash);
    if (disabled_ || closing_) {
      refusal = absl::UnavailableError("kv disk tier: disabled");
    } else if (!slot || slots_[*slot].state != SlotState::kReady) {
      stats_.misses++;
      refusal = absl::NotFoundError(absl::StrCat("kv disk tier: no block ", hashText(hash)));
    } else {
      stats_.hits++;
      pinLocked(*slot);
      PendingLoad load{*slot, hash, dst, std::move(done)};
      if (!free_buffers_.empty() && waiting_loads_.empty()) {
        const int buffer = free_buffers_.back();
        free_buffers_.pop_back();
        startLoadLocked(std::move(load), buffer);
      } else {
        waiting_loads_.push_back(std::move(load));
      }
      return;
    }
  }
  done(refusal);
}

void DiskTier::startLoadLocked(PendingLoad load, int buffer) {
  const uint64_t offset = slotOffset(load.slot);
  const int64_t start = nowMicros();
  io_->read(buffer, record_bytes_, offset,
            [this, load = std::move(load), buffer, start](int64_t result) mutable {
              onReadDone(std::move(load), buffer, result, start);
            });
}

void DiskTier::onReadDone(PendingLoad load, int buffer, int64_t result, int64_t start_us) {
  stats_.read_latency.record(nowMicros() - start_us);
  const bool io_ok = result == static_cast<int64_t>(record_bytes_);
  bool intact = false;
  if (io_ok) {
    // checked and copied off the lock: the buffer is this load's alone. The
    // copy and the checksum go in one pass; on a mismatch dst holds the bad
    // bytes but the load fails (DataLoss), so nothing is served.
    const std::span<const std::byte> record = buffers_->buffer(buffer);
    const std::span<const std::byte> payload =
        record.subspan(kRecordHeaderBytes, options_.block_bytes);
    RecordHeader header;
    intact = decodeRecordHeader(record.first(kRecordHeaderBytes), fingerprint_digest_,
                                options_.block_bytes, &header) == HeaderCheck::kValid &&
             header.hash == load.hash &&
             copyWithChecksum(load.dst, payload) == header.payload_checksum;
  }
  absl::Status status;
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[load.slot];
    if (!io_ok) {
      stats_.io_errors++;
      const std::string what = absl::StrCat("read of ", record_bytes_, " bytes at offset ",
                                            slotOffset(load.slot), " of ", file_.path(),
                                            " failed: ", ioErrorText(result, record_bytes_));
      status = absl::UnavailableError(absl::StrCat("kv disk tier: ", what));
      disableLocked(what, deferred);
      unpinLocked(load.slot);
      releaseBufferLocked(buffer);
    } else if (intact) {
      stats_.loads++;
      stats_.bytes_read += static_cast<int64_t>(record_bytes_);
      unpinLocked(load.slot);
      releaseBufferLocked(buffer);
    } else {
      stats_.checksum_failures++;
      status = absl::DataLossError(absl::StrCat("kv disk tier: block ", hashText(load.hash),
                                                " failed its checksum; dropped"));
      logLine(absl::StrCat("block ", hashText(load.hash), " at offset ", slotOffset(load.slot),
                           " of ", file_.path(), " failed its checksum: dropped, not served"));
      if (s.state == SlotState::kReady && !s.doomed) dropLocked(load.slot);
      if (s.pins == 1 && s.state == SlotState::kReady && !disabled_) {
        // zero its header on disk, so a restart does not find it again; the
        // slot is reused once that write is done.
        s.pins = 0;
        s.doomed = false;
        s.state = SlotState::kInvalidating;
        std::memset(buffers_->buffer(buffer).data(), 0, kRecordHeaderBytes);
        io_->write(buffer, kRecordHeaderBytes, slotOffset(load.slot),
                   [this, slot = load.slot, buffer](int64_t r) { onInvalidateDone(slot, buffer, r); });
      } else {
        unpinLocked(load.slot);
        releaseBufferLocked(buffer);
      }
    }
  }
  runDeferred(deferred);
  load.done(status);
}

void DiskTier::onInvalidateDone(int slot, int buffer, int64_t result) {
  Deferred deferred;
  {
    std::lock_guard lock(mu_);
    if (result != static_cast<int64_t>(kRecordHeaderBytes)) {
      stats_.io_errors++;
      disableLocked(absl::StrCat("write of a header at offset ", slotOffset(slot), " of ",
                                 file_.path(), " failed: ",
                                 ioErrorText(result, kRecordHeaderBytes)),
                    deferred);
    }
    freeSlotLocked(slot);
    releaseBufferLocked(buffer);
  }
  runDeferred(deferred);
}

void DiskTier::remove(BlockHash hash) {
  std::lock_guard lock(mu_);
  const std::optional<int> held = store_.find(hash);
  if (!held) return;
  const int slot = *held;
  Slot& s = slots_[slot];
  if (s.state == SlotState::kReady) {
    dropLocked(slot);
  } else {  // being written: no BlockStored was sent, so no BlockRemoved either
    s.doomed = true;
    store_.unindex(hash);
  }
}

void DiskTier::pinLocked(int slot) {
  if (slots_[slot].pins++ == 0) store_.pin(slot);
}

void DiskTier::unpinLocked(int slot) {
  Slot& s = slots_[slot];
  TANDEM_CHECK(s.pins > 0);
  if (--s.pins > 0) return;
  if (s.doomed) {
    freeSlotLocked(slot);
  } else if (s.state == SlotState::kReady) {
    store_.makeEvictable(slot);  // a load makes its block the most recently used
  }
}

void DiskTier::freeSlotLocked(int slot) {
  Slot& s = slots_[slot];
  s.state = SlotState::kFree;
  s.doomed = false;
  store_.release(slot);
}

void DiskTier::dropLocked(int slot) {
  Slot& s = slots_[slot];
  store_.unindex(s.hash);
  stats_.used_blocks--;
  store_.announceRemoved(s.hash);
  if (s.pins > 0) {
    s.doomed = true;
  } else {
    store_.pin(slot);
    freeSlotLocked(slot);
  }
}

void DiskTier::releaseBufferLocked(int buffer) {
  if (!waiting_loads_.empty() && !disabled_) {
    PendingLoad load = std::move(waiting_loads_.front());
    waiting_loads_.pop_front();
    startLoadLocked(std::move(load), buffer);
    return;
  }
  free_buffers_.push_back(buffer);
}

void DiskTier::disableLocked(std::string reason, Deferred& deferred) {
  if (disabled_) return;
  disabled_ = true;
  stats_.disabled = true;
  logLine(absl::StrCat("disabled: ", reason, "; serving continues without G3"));
  disabled_reason_ = std::move(reason);
  // every readable block goes (the router must stop counting on them);
  // blocks being written go when their write completes.
  std::vector<int> ready;
  for (int slot = 0; slot < num_slots_; ++slot) {
    // a ready slot not doomed is the one its hash finds.
    if (slots_[slot].state == SlotState::kReady && !slots_[slot].doomed) ready.push_back(slot);
  }
  for (int slot : ready) dropLocked(slot);
  for (auto& load : waiting_loads_) {
    unpinLocked(load.slot);
    deferred.emplace_back(std::move(load.done), absl::UnavailableError(absl::StrCat(
                                                    "kv disk tier: disabled: ", disabled_reason_)));
  }
  waiting_loads_.clear();
}

}  // namespace tandem::kvcache
