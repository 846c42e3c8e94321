#include "server/kv_transport/grpc_kv_chunk.h"

#include <string>

namespace tandem::kv_transport {

namespace {

constexpr uint32_t kDataField = 4;  // KvChunk.data
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void appendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// a cursor over a message's slices.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { skipEmpty(); }

  bool atEnd() const { return slice_ == slices_.size(); }
  size_t slice() const { return slice_; }
  size_t offset() const { return offset_; }

  bool byte(uint8_t* b) {
    if (atEnd()) return false;
    *b = slices_[slice_].begin()[offset_];
    advance(1);
    return true;
  }

  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!byte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

  // appends the next n bytes to `out` (nullptr: skips them).
  bool take(uint64_t n, std::string* out) {
    while (n > 0) {
      if (atEnd()) return false;
      const grpc::Slice& s = slices_[slice_];
      const size_t run = std::min<uint64_t>(n, s.size() - offset_);
      if (out != nullptr) out->append(reinterpret_cast<const char*>(s.begin()) + offset_, run);
      advance(run);
      n -= run;
    }
    return true;
  }

 private:
  void advance(size_t n) {
    offset_ += n;
    if (offset_ == slices_[slice_].size()) {
      ++slice_;
      offset_ = 0;
      skipEmpty();
    }
  }
  void skipEmpty() {
    while (slice_ < slices_.size() && slices_[slice_].size() == 0) ++slice_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;
  size_t offset_ = 0;
};

}  // namespace

grpc::ByteBuffer encodeKvChunk(const v1::KvChunk& meta, const std::vector<grpc::Slice>& data) {
  std::string head = meta.SerializeAsString();
  size_t bytes = 0;
  for (const grpc::Slice& s : data) bytes += s.size();
  appendVarint(head, (kDataField << 3) | kLengthDelimited);
  appendVarint(head, bytes);
  std::vector<grpc::Slice> slices;
  slices.reserve(data.size() + 1);
  slices.emplace_back(head);
  for (const grpc::Slice& s : data) {
    if (s.size() > 0) slices.push_back(s);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status decodeKvChunk(const grpc::ByteBuffer& buffer, v1::KvChunk* meta, KvChunkData* data) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return absl::InvalidArgumentError("unreadable KV chunk");
  SliceCursor c(slices);
  std::string rest;  // every field but data, re-encoded for protobuf
  bool have_data = false;
  size_t data_slice = 0, data_offset = 0;
  uint64_t data_bytes = 0;
  while (!c.atEnd()) {
    uint64_t tag = 0;
    if (!c.varint(&tag)) return absl::InvalidArgumentError("truncated KV chunk");
    const uint32_t type = tag & 7;
    const uint64_t field = tag >> 3;
    if (field == kDataField && type == kLengthDelimited) {
      if (have_data) return absl::InvalidArgumentError("KV chunk with two data fields");
      if (!c.varint(&data_bytes)) return absl::InvalidArgumentError("truncated KV chunk");
      have_data = true;
      data_slice = c.slice();
      data_offset = c.offset();
      if (!c.take(data_bytes, nullptr)) return absl::InvalidArgumentError("truncated KV chunk data");
      continue;
    }
    appendVarint(rest, tag);
    uint64_t v = 0;
    bool ok = true;
    switch (type) {
      case kVarint:
        ok = c.varint(&v);
        appendVarint(rest, v);
        break;
      case kFixed64:
        ok = c.take(8, &rest);
        break;
      case kFixed32:
        ok = c.take(4, &rest);
        break;
      case kLengthDelimited:
        ok = c.varint(&v);
        if (ok) appendVarint(rest, v);
        ok = ok && c.take(v, &rest);
        break;
      default:
        ok = false;
    }
    if (!ok) return absl::InvalidArgumentError("malformed KV chunk");
  }
  if (!meta->ParseFromString(rest)) return absl::InvalidArgumentError("malformed KV chunk fields");
  *data = have_data ? KvChunkData(std::move(slices), data_slice, data_offset, data_bytes)
                    : KvChunkData();
  return absl::OkStatus();
}

}  // namespace tandem::kv_transport
