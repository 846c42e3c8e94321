// The wire form of one tandem.v1.KvChunk without copying block bytes through
// protobuf: the sender's `data` field is a list of slices over the source
// blocks (zero-copy), the receiver reads the pieces' bytes straight out of
// gRPC's receive slices into the destination blocks. Both ends speak plain
// KvChunk encoding (fields in any order; `data` at most once), so a protobuf
// peer interoperates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "tandem/v1/kv_transfer.pb.h"

namespace tandem::kv_transport {

// `meta` (every field but data) followed by the concatenation of `data`
// as its data field. The slices are referenced, not copied.
grpc::ByteBuffer encodeKvChunk(const v1::KvChunk& meta, const std::vector<grpc::Slice>& data);

// reads a data field's bytes in order, piece by piece.
class KvChunkData {
 public:
  KvChunkData() = default;
  KvChunkData(std::vector<grpc::Slice> slices, size_t slice, size_t offset, size_t bytes)
      : slices_(std::move(slices)), slice_(slice), offset_(offset), left_(bytes) {}

  // bytes not yet consumed.
  size_t left() const { return left_; }

  // consumes the next `n` (<= left()) bytes, calling fn(const char*, size_t)
  // for each contiguous run.
  template <typename Fn>
  void consume(size_t n, Fn&& fn) {
    left_ -= n;
    while (n > 0) {
      const grpc::Slice& s = slices_[slice_];
      const size_t run = std::min(n, s.size() - offset_);
      fn(reinterpret_cast<const char*>(s.begin()) + offset_, run);
      n -= run;
      offset_ += run;
      if (offset_ == s.size()) {
        ++slice_;
        offset_ = 0;
      }
    }
  }

 private:
  std::vector<grpc::Slice> slices_;
  size_t slice_ = 0;
  size_t offset_ = 0;
  size_t left_ = 0;
};

// splits `buffer` into `meta` (every field but data, parsed) and `data` (the
// data field's bytes, still in gRPC's slices). InvalidArgument for a
// malformed message.
absl::Status decodeKvChunk(const grpc::ByteBuffer& buffer, v1::KvChunk* meta, KvChunkData* data);

}  // namespace tandem::kv_transport
