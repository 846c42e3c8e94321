#include "kvcache/tiers/kv_tier_chain.h"

#include <chrono>
#include <cmath>
#include <type_traits>

#include "common/status.h"

namespace tandem::kvcache {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int indexOf(KvTier tier) { return tier == KvTier::kHost ? 0 : 1; }

}  // namespace

// what the tiers' callbacks touch: it outlives the chain while a callback
// holds it.
struct KvTierChain::Shared {
  mutable std::mutex mu;
  std::array<KvTierStats, 2> stats;     // guarded by mu; [G2, G3]
  std::deque<uint64_t> completed;       // guarded by mu
  std::function<void()> wakeup;         // guarded by mu
  KvEventListener* listener = nullptr;  // guarded by mu
};

// the loads of one startLoads call.
struct KvTierChain::LoadJob {
  std::vector<Load> loads;
  // written once per load by its callback, read after `remaining` reached 0.
  std::vector<absl::Status> status;
  // used when G1 is not host memory: load i lands at i * blockBytes.
  std::vector<std::byte> staging;
  // loads not completed, plus one while startLoads is still issuing them.
  std::atomic<int> remaining{0};
};

KvTierChain::KvTierChain(KvBlockIo& g1, KvTierPolicy policy)
    : g1_(g1), policy_(policy), shared_(std::make_shared<Shared>()) {
  shared_->stats[kHostIndex].tier = KvTier::kHost;
  shared_->stats[kDiskIndex].tier = KvTier::kDisk;
}

KvTierChain::~KvTierChain() {
  settle();  // no copy may still write into G2's slots
  // G3 first: G2's eviction sink stores into it.
  g3_.reset();
  g2_.reset();
}

void KvTierChain::setHostTier(std::unique_ptr<HostTier> g2) {
  TANDEM_CHECK(g2 != nullptr && g2->blockBytes() == g1_.blockBytes());
  g2_ = std::move(g2);
  g2_->setEventListener(this);
  g2_->setEvictionSink([this](BlockHash hash, BlockHash parent, std::span<const std::byte> data) {
    if (g3_ != nullptr) storeInto(kDiskIndex, hash, parent, data);
  });
  std::lock_guard lock(shared_->mu);
  shared_->stats[kHostIndex].io_mode = "memcpy";
}

void KvTierChain::setDiskTier(std::unique_ptr<LowerTier> g3, std::string io_mode,
                              std::vector<std::pair<BlockHash, BlockHash>> recovered) {
  TANDEM_CHECK(g3 != nullptr && g3->blockBytes() == g1_.blockBytes());
  g3_ = std::move(g3);
  recovered_ = std::move(recovered);
  g3_->setEventListener(this);
  std::lock_guard lock(shared_->mu);
  shared_->stats[kDiskIndex].io_mode = std::move(io_mode);
}

void KvTierChain::setEventListener(KvEventListener* listener) {
  // G3's lock is never taken under shared_->mu (its events take that one).
  std::vector<std::pair<BlockHash, BlockHash>> recovered;
  if (listener != nullptr && g3_ != nullptr) {
    for (const auto& block : recovered_) {
      if (g3_->contains(block.first)) recovered.push_back(block);
    }
    recovered_.clear();
  }
  std::lock_guard lock(shared_->mu);
  shared_->listener = listener;
  for (const auto& [hash, parent] : recovered) {
    listener->onKvEvent(BlockStored{hash, parent, KvTier::kDisk});
  }
}

void KvTierChain::setCompletionWakeup(std::function<void()> wakeup) {
  std::lock_guard lock(shared_->mu);
  shared_->wakeup = std::move(wakeup);
}

void KvTierChain::onKvEvent(const KvEvent& event) {
  std::lock_guard lock(shared_->mu);
  if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
    ++shared_->stats[indexOf(removed->tier)].evictions;
  }
  if (shared_->listener != nullptr) shared_->listener->onKvEvent(event);
}

void KvTierChain::storeInto(int index, BlockHash hash, BlockHash parent,
                            std::span<const std::byte> data) {
  LowerTier* tier = tierAt(index);
  const Clock::time_point start = Clock::now();
  const size_t bytes = data.size();
  const bool taken = tier->store(hash, parent, data, [shared = shared_, index, start, bytes](absl::Status status) {
    std::lock_guard lock(shared->mu);
    KvTierStats& s = shared->stats[index];
    if (!status.ok()) {
      ++s.write_failures;
      return;
    }
    ++s.offloads;
    s.bytes_written += bytes;
    s.write_seconds.observe(secondsSince(start));
  });
  if (!taken) {
    std::lock_guard lock(shared_->mu);
    ++shared_->stats[index].admission_rejections;
  }
}

void KvTierChain::onEvict(BlockId id, BlockHash hash, BlockHash parent_hash) {
  const int top = g2_ != nullptr ? kHostIndex : kDiskIndex;
  LowerTier* tier = tierAt(top);
  if (tier == nullptr || tier->contains(hash)) return;
  std::span<const std::byte> data = g1_.hostBlock(id);
  if (data.empty() && g2_ != nullptr) {
    // a device's block: copied into a G2 slot on the transfer stream, held
    // once settle() saw the copies done (none is waited for here)
    const std::span<std::byte> slot = g2_->reserve(hash);
    if (slot.empty()) return;  // held already, or every slot on its way
    g1_.read(id, slot);
    pending_evictions_.push_back({hash, parent_hash, slot});
    return;
  }
  if (data.empty()) {  // G3 alone: its writes need the bytes now
    evict_staging_.resize(g1_.blockBytes());
    g1_.read(id, evict_staging_);
    g1_.flush();
    data = evict_staging_;
  }
  storeInto(top, hash, parent_hash, data);
}

void KvTierChain::settle() {
  if (pending_evictions_.empty()) return;
  g1_.flush();
  uint64_t bytes = 0;
  // (commit announces the block: onKvEvent takes shared_->mu)
  for (const PendingEviction& e : pending_evictions_) {
    g2_->commit(e.hash, e.parent, e.slot);
    bytes += e.slot.size();
  }
  {
    std::lock_guard lock(shared_->mu);
    KvTierStats& s = shared_->stats[kHostIndex];
    s.offloads += pending_evictions_.size();
    s.bytes_written += bytes;
  }
  pending_evictions_.clear();
}

std::optional<KvTier> KvTierChain::locate(BlockHash hash, bool include_disk) const {
  if (g2_ != nullptr && g2_->contains(hash)) return KvTier::kHost;
  if (include_disk && g3_ != nullptr && g3_->contains(hash)) return KvTier::kDisk;
  return std::nullopt;
}

KvTierChain::Started KvTierChain::startLoads(std::span<const Load> loads) {
  const uint64_t ticket = next_ticket_++;
  auto job = std::make_shared<LoadJob>();
  job->loads.assign(loads.begin(), loads.end());
  job->status.assign(loads.size(), absl::OkStatus());
  job->remaining.store(static_cast<int>(loads.size()) + 1);
  const size_t bytes = g1_.blockBytes();
  bool staged = false;
  for (size_t i = 0; i < loads.size(); ++i) {
    std::span<std::byte> dst = g1_.hostBlock(loads[i].dst);
    if (dst.empty()) {
      if (!staged) job->staging.resize(loads.size() * bytes);
      staged = true;
      dst = std::span<std::byte>(job->staging).subspan(i * bytes, bytes);
    }
    const std::optional<KvTier> where = locate(loads[i].hash, true);
    auto done = [shared = shared_, job, i, ticket, bytes, index = where ? indexOf(*where) : 0,
                 start = Clock::now()](absl::Status status) {
      {
        std::lock_guard lock(shared->mu);
        KvTierStats& s = shared->stats[index];
        if (status.ok()) {
          ++s.onboards;
          s.bytes_read += bytes;
          s.read_seconds.observe(secondsSince(start));
        } else {
          ++s.load_failures;
        }
      }
      job->status[i] = std::move(status);
      if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // the last load completed on the tier's thread, after startLoads.
        std::lock_guard lock(shared->mu);
        shared->completed.push_back(ticket);
        if (shared->wakeup) shared->wakeup();
      }
    };
    if (!where) {
      // gone since the caller looked (evicted to make room in G1 meanwhile).
      done(absl::NotFoundError("the block left the lower tiers before its load"));
      continue;
    }
    {
      std::lock_guard lock(shared_->mu);
      ++shared_->stats[indexOf(*where)].hits;
    }
    tierAt(indexOf(*where))->load(loads[i].hash, dst, std::move(done));
  }
  jobs_.emplace(ticket, job);
  const bool done = job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1;
  return Started{ticket, done};
}

std::vector<uint64_t> KvTierChain::takeCompleted() {
  std::lock_guard lock(shared_->mu);
  std::vector<uint64_t> out(shared_->completed.begin(), shared_->completed.end());
  shared_->completed.clear();
  return out;
}

std::vector<bool> KvTierChain::finishLoads(uint64_t ticket) {
  auto it = jobs_.find(ticket);
  if (it == jobs_.end()) return {};
  std::shared_ptr<LoadJob> job = std::move(it->second);
  jobs_.erase(it);
  TANDEM_CHECK(job->remaining.load(std::memory_order_acquire) == 0);
  const size_t bytes = g1_.blockBytes();
  std::vector<bool> ok(job->loads.size());
  for (size_t i = 0; i < job->loads.size(); ++i) {
    ok[i] = job->status[i].ok();
    if (ok[i] && !job->staging.empty()) {
      g1_.write(job->loads[i].dst,
                std::span<const std::byte>(job->staging).subspan(i * bytes, bytes));
    }
  }
  // the staging goes with the job: its copies land first
  if (!job->staging.empty()) g1_.flush();
  return ok;
}

void KvTierChain::maintain() {
  settle();
  if (g2_ == nullptr || g3_ == nullptr) return;
  const int64_t capacity = g2_->capacityBlocks();
  const auto high = static_cast<int64_t>(std::floor(capacity * policy_.high_watermark));
  const int64_t used = g2_->numBlocks();
  if (used <= high) return;
  const auto low = static_cast<int64_t>(std::floor(capacity * policy_.low_watermark));
  g2_->evictDownTo(std::max<int64_t>(low, used - policy_.max_demotions_per_step));
}

std::vector<KvTierStats> KvTierChain::stats() const {
  std::vector<KvTierStats> out;
  for (int index : {kHostIndex, kDiskIndex}) {
    const LowerTier* tier = tierAt(index);
    if (tier == nullptr) continue;
    // the tier's own lock, never under shared_->mu (its events take that).
    const int64_t capacity = tier->capacityBlocks();
    const int64_t used = tier->numBlocks();
    std::lock_guard lock(shared_->mu);
    KvTierStats s = shared_->stats[index];
    s.capacity_blocks = capacity;
    s.used_blocks = used;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tandem::kvcache
