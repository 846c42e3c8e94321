// kvcache::KvBlockIo over a ModelRunner's KV storage: the tiers below the
// engine's pool read and write G1 blocks through it.
#pragma once

#include "kernels/backend.h"
#include "kvcache/tiers/kv_block_io.h"
#include "server/engine/model_runner.h"

namespace tandem::engine {

class RunnerBlockIo final : public kvcache::KvBlockIo {
 public:
  // `runner` and `backend` must outlive this. `host_addressable`: the KV
  // storage is host memory (the CPU backend), so hostBlock() is direct.
  RunnerBlockIo(const ModelRunner& runner, kernels::Backend& backend, bool host_addressable)
      : runner_(runner), backend_(backend), host_addressable_(host_addressable) {}

  // ---- kvcache::KvBlockIo ----
  size_t blockBytes() const override { return runner_.kvLayout().blockBytes(); }
  std::span<std::byte> hostBlock(kvcache::BlockId id) override;
  void read(kvcache::BlockId id, std::span<std::byte> dst) override;
  void write(kvcache::BlockId id, std::span<const std::byte> src) override;

 private:
  const ModelRunner& runner_;
  kernels::Backend& backend_;
  const bool host_addressable_;
};

}  // namespace tandem::engine
