// Test stand-ins for the G3 disk tier (not merged here yet) and the engine's
// G1 bytes: ManualTier is a LowerTier whose loads complete only when the
// test says so, on a thread of their own, as a disk's completion thread
// would; BytesBlockIo is G1 as a plain byte array.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "kvcache/tiers/kv_block_io.h"
#include "kvcache/tiers/lower_tier.h"

namespace tandem::kvcache::testing {

class ManualTier final : public LowerTier {
 public:
  explicit ManualTier(size_t block_bytes, int64_t capacity = 1 << 20)
      : block_bytes_(block_bytes), capacity_(capacity) {}

  KvTier tier() const override { return KvTier::kDisk; }
  size_t blockBytes() const override { return block_bytes_; }
  int64_t capacityBlocks() const override { return capacity_; }
  int64_t numBlocks() const override {
    std::lock_guard lock(mu_);
    return static_cast<int64_t>(blocks_.size());
  }
  bool contains(BlockHash hash) const override {
    std::lock_guard lock(mu_);
    return blocks_.contains(hash);
  }
  bool store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
             TierDone done) override {
    KvEventListener* listener;
    {
      std::lock_guard lock(mu_);
      if (refuse_stores_) return false;
      if (fail_writes_) {
        done(absl::InternalError("write failed (test)"));
        return true;
      }
      blocks_[hash].assign(data.begin(), data.end());
      listener = listener_;
    }
    if (listener != nullptr) listener->onKvEvent(BlockStored{hash, parent, KvTier::kDisk});
    done(absl::OkStatus());
    return true;
  }
  void load(BlockHash hash, std::span<std::byte> dst, TierDone done) override {
    std::lock_guard lock(mu_);
    pending_.push_back({hash, dst, std::move(done)});
    cv_.notify_all();
  }
  void remove(BlockHash hash) override {
    std::lock_guard lock(mu_);
    blocks_.erase(hash);
  }
  void setEventListener(KvEventListener* listener) override {
    std::lock_guard lock(mu_);
    listener_ = listener;
  }

  void refuseStores(bool refuse) {
    std::lock_guard lock(mu_);
    refuse_stores_ = refuse;
  }
  // stores are taken, then fail (done gets an error, nothing is kept).
  void failWrites(bool fail) {
    std::lock_guard lock(mu_);
    fail_writes_ = fail;
  }
  // waits up to 30 s until at least n loads are pending.
  bool waitForPendingLoads(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return pending_.size() >= n; });
  }
  // completes every pending load on another thread (NotFound when the block
  // is gone) and waits for it; `fail` makes them all fail with DataLoss.
  void completePendingLoads(bool fail = false) {
    std::vector<Pending> batch;
    {
      std::lock_guard lock(mu_);
      batch.swap(pending_);
    }
    std::thread([&] {
      for (Pending& p : batch) {
        absl::Status status = absl::OkStatus();
        {
          std::lock_guard lock(mu_);
          auto it = blocks_.find(p.hash);
          if (fail) {
            status = absl::DataLossError("checksum mismatch (test)");
          } else if (it == blocks_.end()) {
            status = absl::NotFoundError("gone");
          } else {
            std::memcpy(p.dst.data(), it->second.data(), block_bytes_);
          }
        }
        p.done(status);
      }
    }).join();
  }

 private:
  struct Pending {
    BlockHash hash;
    std::span<std::byte> dst;
    TierDone done;
  };
  const size_t block_bytes_;
  const int64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<BlockHash, std::vector<std::byte>> blocks_;
  std::vector<Pending> pending_;
  KvEventListener* listener_ = nullptr;
  bool refuse_stores_ = false;
  bool fail_writes_ = false;
};

// G1 as num_blocks * block_bytes bytes of host memory.
class BytesBlockIo final : public KvBlockIo {
 public:
  BytesBlockIo(int num_blocks, size_t block_bytes, bool host = true)
      : bytes_(static_cast<size_t>(num_blocks) * block_bytes), block_bytes_(block_bytes), host_(host) {}
  size_t blockBytes() const override { return block_bytes_; }
  std::span<std::byte> hostBlock(BlockId id) override {
    if (!host_) return {};
    return block(id);
  }
  void read(BlockId id, std::span<std::byte> dst) override {
    std::memcpy(dst.data(), block(id).data(), block_bytes_);
  }
  void write(BlockId id, std::span<const std::byte> src) override {
    std::memcpy(block(id).data(), src.data(), block_bytes_);
  }
  std::span<std::byte> block(BlockId id) {
    return std::span<std::byte>(bytes_).subspan(static_cast<size_t>(id) * block_bytes_, block_bytes_);
  }
  // fills block `id` with bytes derived from `seed`.
  void fill(BlockId id, int seed) {
    auto b = block(id);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((seed * 131 + i * 7) & 0xff);
  }
  bool holds(BlockId id, int seed) {
    auto b = block(id);
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] != static_cast<std::byte>((seed * 131 + i * 7) & 0xff)) return false;
    }
    return true;
  }

 private:
  std::vector<std::byte> bytes_;
  size_t block_bytes_;
  bool host_;
};

}  // namespace tandem::kvcache::testing
