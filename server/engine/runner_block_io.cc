#include "server/engine/runner_block_io.h"

#include "common/status.h"

namespace tandem::engine {

std::span<std::byte> RunnerBlockIo::hostBlock(kvcache::BlockId id) {
  if (!host_addressable_) return {};
  return {static_cast<std::byte*>(runner_.blockData(id)), blockBytes()};
}

void RunnerBlockIo::read(kvcache::BlockId id, std::span<std::byte> dst) {
  TANDEM_CHECK(dst.size() == blockBytes());
  backend_.download(dst.data(), runner_.blockData(id), dst.size());
}

void RunnerBlockIo::write(kvcache::BlockId id, std::span<const std::byte> src) {
  TANDEM_CHECK(src.size() == blockBytes());
  backend_.upload(runner_.blockData(id), src.data(), src.size());
}

}  // namespace tandem::engine
