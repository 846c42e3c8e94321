// A KV transport fault for tests (server/kv_transport/kv_fault_injector.h):
// flips the first byte of block `index` of every transfer in transit, after
// its checksum was computed, so D must detect it and never use the block.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/kv_transport/kv_fault_injector.h"

namespace tandem::testing {

class CorruptBlockFault : public kv_transport::KvFaultInjector {
 public:
  explicit CorruptBlockFault(int32_t index) : index_(index) {}

  // kv_transport::KvFaultInjector
  void inTransit(int32_t index, size_t offset, std::span<uint8_t> bytes) override {
    if (index != index_ || offset != 0 || bytes.empty()) return;
    bytes[0] ^= 0x5a;
    corrupted_.fetch_add(1, std::memory_order_relaxed);
  }

  // blocks corrupted so far.
  int corrupted() const { return corrupted_.load(std::memory_order_relaxed); }

 private:
  const int32_t index_;
  std::atomic<int> corrupted_{0};
};

}  // namespace tandem::testing
