#include "server/kv_transport/kv_push_sink.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/block_copy.h"

namespace tandem::kv_transport {

KvPushSink::KvPushSink(std::shared_ptr<TransferTable> table, AbortFn on_abort)
    : table_(std::move(table)), on_abort_(std::move(on_abort)) {}

absl::Status KvPushSink::store(const v1::KvChunk& chunk, KvChunkData& data) {
  const KvStorage& storage = table_->storage();
  if (active_ == nullptr) {
    RETURN_IF_ERROR(checkSenderBlockBytes(chunk.block_bytes(), storage));
    ASSIGN_OR_RETURN(active_, table_->claim(chunk.transfer_id(), "grpc", std::move(on_abort_)));
  }
  for (const v1::KvPiece& p : chunk.pieces()) {
    if (p.length() > data.left() || p.offset() > storage.block_bytes ||
        p.length() > storage.block_bytes - p.offset()) {
      return absl::InvalidArgumentError(absl::StrCat("bad piece of block ", p.index()));
    }
    if (p.offset() == 0) {
      if (block_ >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("block ", p.index(), " began before block ", block_, " ended"));
      }
      RETURN_IF_ERROR(active_->beginBlock(p.index(), p.block_hash()));
      block_ = p.index();
      block_offset_ = 0;
      checksum_.reset();
    } else if (p.index() != block_ || p.offset() != block_offset_) {
      return absl::InvalidArgumentError(
          absl::StrCat("piece of block ", p.index(), " at offset ", p.offset(), " out of order"));
    }
    char* dst = storage.block(active_->dstBlock(block_)) + p.offset();
    data.consume(p.length(), [&](const char* src, size_t n) {
      // in cache-sized slices: the stored bytes are checked while still in
      // cache, and checking them covers this copy too.
      for (size_t off = 0; off < n; off += kCopySliceBytes) {
        const size_t m = std::min(kCopySliceBytes, n - off);
        std::memcpy(dst + off, src + off, m);
        checksum_.update(dst + off, m);
      }
      dst += n;
    });
    block_offset_ += p.length();
    bytes_ += p.length();
    if (block_offset_ == storage.block_bytes) {
      RETURN_IF_ERROR(active_->endBlock(block_, p.checksum(), checksum_.digest()));
      block_ = -1;
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::kv_transport
