// G3: KV blocks on local NVMe, in preallocated file(s) in a directory, read
// and written with O_DIRECT through io_uring (registered buffers and file,
// batched submissions, completions on the ring's own thread) or through a
// small pread/pwrite thread pool. Persistent: a restart rebuilds the index
// from the records on disk; a record that fails its checksum is never served.
//
// Record format, write protocol and why stale records are safe:
// kvcache/tiers/disk_record.h and docs/design/kv-tiers.md.
//
// Fallbacks, each one log line on stderr and a flag in stats():
//   io_uring cannot be set up (old kernel, io_uring_disabled, seccomp) -> threads;
//   the file system refuses O_DIRECT (ramfs, some FUSE) -> buffered I/O;
//   the directory cannot be made, the file cannot be preallocated (ENOSPC),
//   or a read/write fails (EIO, ENOSPC, EFBIG) -> the tier disables itself:
//   it drops every block (BlockRemoved each), store() answers false and
//   load() Unavailable from then on; serving continues without G3.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kvcache/tiers/aligned_buffer_pool.h"
#include "kvcache/slot_store.h"
#include "kvcache/tiers/disk_file.h"
#include "kvcache/tiers/disk_io.h"
#include "kvcache/tiers/disk_tier_stats.h"
#include "kvcache/tiers/hit_counter.h"
#include "kvcache/tiers/lower_tier.h"
#include "kvcache/tiers/model_fingerprint.h"

namespace tandem::kvcache {

enum class DiskIoMode { kUring, kThreads };

struct DiskTierOptions {
  std::string dir;  // created if missing
  uint64_t capacity_bytes = 0;
  DiskIoMode io = DiskIoMode::kUring;
  int queue_depth = 32;  // I/Os in flight at most (= staging buffers)
  // admission: store() refuses a hash offered fewer than min_hits times (the
  // tier counts offers per hash in a bounded table); 1 = every block.
  int min_hits = 2;
  size_t block_bytes = 0;
  ModelFingerprint fingerprint;
  // at open, read every record whole and check its payload checksum too (by
  // default only headers are read; payloads are checked on every load).
  bool verify_at_open = false;
  // how long open waits for the file's lock when another holds it (a worker
  // restarted after a crash: see DiskFile::open); then the tier is disabled.
  absl::Duration lock_wait = absl::ZeroDuration();
};

class DiskTier final : public LowerTier {
 public:
  // the file in options.dir that holds the records.
  static constexpr const char* kFileName = "kv-g3.blocks";

  // opens/creates the file(s), rebuilds the index from disk (dropping torn,
  // foreign-model and bad-checksum records), falls back uring->threads and
  // O_DIRECT->buffered with one log line each.
  // InvalidArgument: block_bytes 0, capacity below one record, empty dir,
  // queue_depth or min_hits below 1. A directory that cannot be made, a file
  // that cannot be opened or preallocated, or a read error during the scan do
  // NOT fail open: they give a disabled tier (disabled(), disabledReason(),
  // stats().disabled), so the worker reports it and serves without G3.
  static absl::StatusOr<std::unique_ptr<DiskTier>> open(DiskTierOptions options);
  // waits for the I/O in flight (their done callbacks run); loads still
  // waiting for a staging buffer get Unavailable.
  ~DiskTier() override;

  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // LowerTier
  KvTier tier() const override { return KvTier::kDisk; }
  size_t blockBytes() const override { return options_.block_bytes; }
  int64_t capacityBlocks() const override { return num_slots_; }
  int64_t numBlocks() const override;
  bool contains(BlockHash hash) const override;
  // also false for a hash whose write is still in flight, and for a hash
  // offered fewer than min_hits times (each call counts as one offer).
  // Copies `data` and computes its checksum on the caller's thread.
  bool store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
             TierDone done) override;
  void load(BlockHash hash, std::span<std::byte> dst, TierDone done) override;
  void remove(BlockHash hash) override;
  void setEventListener(KvEventListener* listener) override;

  // (hash, parent) of every valid block found at open, oldest write first, for
  // republishing as BlockStored{.., kDisk}.
  std::vector<std::pair<BlockHash, BlockHash>> recovered() const;
  // after ENOSPC / EIO: store/load refuse, serving continues.
  bool disabled() const;
  std::string disabledReason() const;
  // "uring+direct", "uring+buffered", "threads+direct" or "threads+buffered"
  // (the metric label).
  std::string_view ioModeName() const { return io_mode_name_; }
  const DiskTierStats& stats() const { return stats_; }
  // bytes one record takes on disk: a 4 KiB header + the payload rounded up to 4 KiB.
  size_t recordBytes() const { return record_bytes_; }
  // the file holding the records.
  const std::string& path() const { return file_.path(); }

 private:
  enum class SlotState : uint8_t {
    kFree,
    kWriting,       // its record's write is in flight
    kReady,         // readable; evictable unless pinned
    kInvalidating,  // failed its checksum; its header is being zeroed on disk
  };
  struct Slot {
    SlotState state = SlotState::kFree;
    BlockHash hash = 0;
    BlockHash parent = 0;
    int pins = 0;         // loads in flight or waiting for a buffer
    bool doomed = false;  // dropped while pinned or being written: freed when that ends
  };
  struct PendingLoad {
    int slot;
    BlockHash hash;
    std::span<std::byte> dst;
    TierDone done;
  };
  // done callbacks to run once mu_ is released (they may call back in).
  using Deferred = std::vector<std::pair<TierDone, absl::Status>>;

  explicit DiskTier(DiskTierOptions options);
  void openFileAndIo();
  void scan();
  int takeSlotLocked();
  void pinLocked(int slot);
  void unpinLocked(int slot);
  void freeSlotLocked(int slot);
  // drops a ready block: out of the index, BlockRemoved emitted; its slot is
  // freed now, or when its last pin goes.
  void dropLocked(int slot);
  void disableLocked(std::string reason, Deferred& deferred);
  void startLoadLocked(PendingLoad load, int buffer);
  // hands the buffer to the oldest waiting load, or back to the free list.
  void releaseBufferLocked(int buffer);
  void onWriteDone(int slot, int buffer, int64_t result, int64_t start_us, TierDone done);
  void onReadDone(PendingLoad load, int buffer, int64_t result, int64_t start_us);
  void onInvalidateDone(int slot, int buffer, int64_t result);
  uint64_t slotOffset(int slot) const { return static_cast<uint64_t>(slot) * record_bytes_; }

  const DiskTierOptions options_;
  const uint64_t fingerprint_digest_;
  const size_t record_bytes_;
  const int num_slots_;
  DiskFile file_;
  std::unique_ptr<AlignedBufferPool> buffers_;
  std::unique_ptr<DiskIo> io_;  // after file_ and buffers_: destroyed (drained) first
  std::string io_mode_name_ = "none";
  DiskTierStats stats_;

  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  // indexes ready and being-written blocks; ready, unpinned slots are
  // evictable. Free slots are released by scan().
  SlotStore store_;
  std::vector<int> free_buffers_;
  std::deque<PendingLoad> waiting_loads_;  // loads waiting for a staging buffer
  HitCounter offers_;
  uint64_t next_sequence_ = 1;
  bool disabled_ = false;
  bool closing_ = false;
  std::string disabled_reason_;
  std::vector<std::pair<BlockHash, BlockHash>> recovered_;
};

}  // namespace tandem::kvcache
