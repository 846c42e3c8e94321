#include "server/engine/runner_block_io.h"

#include <cstdio>
#include <cstdlib>

#include "common/status.h"

namespace tandem::engine {

RunnerBlockIo::RunnerBlockIo(const ModelRunner& runner, kernels::Backend& backend,
                             bool host_addressable)
    : runner_(runner), backend_(backend), host_addressable_(host_addressable) {
  if (host_addressable_) return;
  absl::StatusOr<kernels::TransferStreamPtr> stream = backend_.createTransferStream();
  if (stream.ok()) {
    transfers_ = std::move(*stream);
  } else {
    std::fprintf(stderr, "tandem: KV tier copies use the compute stream (%s)\n",
                 stream.status().ToString().c_str());
  }
}

std::span<std::byte> RunnerBlockIo::hostBlock(kvcache::BlockId id) {
  if (!host_addressable_) return {};
  return {static_cast<std::byte*>(runner_.blockData(id)), blockBytes()};
}

void RunnerBlockIo::read(kvcache::BlockId id, std::span<std::byte> dst) {
  TANDEM_CHECK(dst.size() == blockBytes());
  if (transfers_ == nullptr) {
    backend_.download(dst.data(), runner_.blockData(id), dst.size());
    compute_copies_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  transfers_->copyToHost(dst.data(), runner_.blockData(id), dst.size());
  queued_ = true;
  transfer_copies_.fetch_add(1, std::memory_order_relaxed);
}

void RunnerBlockIo::write(kvcache::BlockId id, std::span<const std::byte> src) {
  TANDEM_CHECK(src.size() == blockBytes());
  if (transfers_ == nullptr) {
    backend_.upload(runner_.blockData(id), src.data(), src.size());
    compute_copies_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  transfers_->copyToDevice(runner_.blockData(id), src.data(), src.size());
  queued_ = true;
  transfer_copies_.fetch_add(1, std::memory_order_relaxed);
}

void RunnerBlockIo::flush() {
  if (transfers_ == nullptr || !queued_) return;
  queued_ = false;
  transfer_waits_.fetch_add(1, std::memory_order_relaxed);
  const absl::Status s = transfers_->synchronize();
  if (!s.ok()) {
    std::fprintf(stderr, "tandem: KV tier copy failed: %s\n", s.ToString().c_str());
    std::abort();
  }
}

RunnerBlockIo::Stats RunnerBlockIo::stats() const {
  return Stats{transfer_copies_.load(std::memory_order_relaxed),
               compute_copies_.load(std::memory_order_relaxed),
               transfer_waits_.load(std::memory_order_relaxed)};
}

}  // namespace tandem::engine
