// kvcache::KvBlockIo over a ModelRunner's KV storage: the tiers below the
// engine's pool read and write G1 blocks through it. With the KV in host
// memory (the cpu backend) the tiers copy the blocks directly; on a device
// backend the copies run on a transfer stream of their own
// (kernels/transfer_stream.h), never on the compute stream: a prompt's
// onboarded blocks, and a step's evicted ones, are queued and waited for
// once (flush()).
#pragma once

#include <atomic>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/transfer_stream.h"
#include "kvcache/tiers/kv_block_io.h"
#include "server/engine/model_runner.h"

namespace tandem::engine {

class RunnerBlockIo final : public kvcache::KvBlockIo {
 public:
  // blocks copied each way, counted for the tests and the worker's log.
  struct Stats {
    // on the transfer stream (a device backend).
    uint64_t transfer_stream_copies = 0;
    // on the compute stream: a device backend that could give no transfer
    // stream falls back to its synchronous download/upload.
    uint64_t compute_stream_copies = 0;
    // waits for the transfer stream (flush() with copies queued).
    uint64_t transfer_waits = 0;
  };

  // `runner` and `backend` must outlive this. `host_addressable`: the KV
  // storage is host memory (the cpu backend), so hostBlock() is direct;
  // otherwise a transfer stream is made now, and where the backend has none
  // the copies fall back to the compute stream (said on stderr once).
  RunnerBlockIo(const ModelRunner& runner, kernels::Backend& backend, bool host_addressable);

  // ---- kvcache::KvBlockIo ----
  size_t blockBytes() const override { return runner_.kvLayout().blockBytes(); }
  std::span<std::byte> hostBlock(kvcache::BlockId id) override;
  // queued on the transfer stream: the engine calls it between steps, when
  // the compute stream has finished writing the block.
  void read(kvcache::BlockId id, std::span<std::byte> dst) override;
  void write(kvcache::BlockId id, std::span<const std::byte> src) override;
  // a failed device copy cannot be handed back through KvBlockIo (the tier
  // would keep wrong bytes): the process stops, as on any device error.
  void flush() override;

  // any thread.
  Stats stats() const;

 private:

  const ModelRunner& runner_;
  kernels::Backend& backend_;
  const bool host_addressable_;
  kernels::TransferStreamPtr transfers_;
  std::atomic<uint64_t> transfer_copies_{0};
  std::atomic<uint64_t> compute_copies_{0};
  std::atomic<uint64_t> transfer_waits_{0};
  bool queued_ = false;  // copies queued since the last wait (the engine thread's)
};

}  // namespace tandem::engine
