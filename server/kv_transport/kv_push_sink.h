// The receiving end of one gRPC Push call's chunks (tandem.v1.KvChunk, split
// by grpc_kv_chunk into fields and data bytes): a peer's message, checked
// before a byte is stored. The first chunk claims its transfer from the
// TransferTable (block size must match D's); every piece must lie inside one
// block, blocks arrive whole and in order, each block's start is checked by
// ActiveTransfer::beginBlock (index, hash) and its end by endBlock (the
// checksum of the stored bytes). Bytes go straight into D's blocks.
// Used by GrpcKvReceiver's Push reactor and by fuzz/kv_chunk_fuzzer.cc.
// Not thread-safe: one call's chunks arrive one at a time.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/grpc_kv_chunk.h"
#include "server/kv_transport/transfer_table.h"
#include "tandem/v1/kv_transfer.pb.h"

namespace tandem::kv_transport {

class KvPushSink {
 public:
  // `on_abort` is handed to TransferTable::claim: it runs when the claimed
  // transfer ends outside this sink (timeout, cancel).
  KvPushSink(std::shared_ptr<TransferTable> table, AbortFn on_abort);

  // stores one chunk's pieces (their bytes in `data`). InvalidArgument for
  // a chunk that does not fit D's storage or the transfer (wrong block size,
  // a piece outside its block or out of order, more bytes than `data`
  // holds), or the claim's and ActiveTransfer's errors. After an error the
  // caller fails the transfer and ends the call.
  absl::Status store(const v1::KvChunk& chunk, KvChunkData& data);

  // the claimed transfer (null before the first chunk was stored).
  const ActiveTransferPtr& active() const { return active_; }
  // bytes stored so far.
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<TransferTable> table_;
  AbortFn on_abort_;
  ActiveTransferPtr active_;
  uint64_t bytes_ = 0;
  // the block being received, its bytes so far and their running checksum.
  int block_ = -1;
  size_t block_offset_ = 0;
  BlockChecksum checksum_;
};

}  // namespace tandem::kv_transport
