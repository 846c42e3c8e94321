// The seam through which tests inject faults into the KV transport (the one
// mechanism for test hooks, docs/design/testing.md): production code never
// sets one, so no test-only flag or option reaches the CLI or the options a
// user fills. In-process tests hand an injector to the sender's options
// (KvSenderOptions::faults, through WorkerOptions::kv_faults for a worker);
// tests of real processes start a test-only binary that does the same
// (tests/integration/fault_worker_main.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace tandem::kv_transport {

class KvFaultInjector {
 public:
  virtual ~KvFaultInjector() = default;

  // P: block `index` of a transfer is on its way, its checksum already
  // computed from P's source. `bytes` are the copy in transit (D's memory
  // for shm, the outgoing message for gRPC; all of the block, or a piece of
  // it starting at `offset` bytes into the block), never P's own KV storage:
  // the injector may change them, and D must then notice. Called on the
  // sending thread; must not block.
  virtual void inTransit(int32_t index, size_t offset, std::span<uint8_t> bytes) = 0;
};
using KvFaultInjectorPtr = std::shared_ptr<KvFaultInjector>;

}  // namespace tandem::kv_transport
