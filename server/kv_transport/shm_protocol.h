// The control channel of the shm transport: length-prefixed frames over a
// unix stream socket in the abstract namespace (no file to clean up). An
// abstract socket has no file permissions: any process of the host's network
// namespace can connect. So both ends check who the other is with
// SO_PEERCRED (checkPeer): D serves only senders running as its own uid (or
// a configured one), and P hands its blocks only to such a D.
// Bytes never travel here, only who writes which block and the verdicts:
//
//   P → D  kOpen     {u64 block_bytes, transfer_id}
//   D → P  kOpened   {i32 code, u64 region_bytes, u64 region_id, u32 n,
//                     u64 storage_offset, i32 dst[n], message}
//                    + the region's memfd (SCM_RIGHTS) when code is OK; block
//                    id b lives at storage_offset + b * block_bytes
//   P → D  kBlocks   n × {i32 index, u64 hash, u64 checksum}: copied, please verify
//   P → D  kFinish   {}
//   D → P  kResult   {i32 code, i32 failed_block, message}: the transfer ended
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::kv_transport::shm {

enum class MessageType : uint32_t { kOpen = 1, kOpened = 2, kBlocks = 3, kFinish = 4, kResult = 5 };

using Deadline = std::chrono::steady_clock::time_point;

struct Frame {
  MessageType type = MessageType::kOpen;
  std::string payload;
  int fd = -1;  // a received descriptor (the caller owns it), or -1
};

// frames larger than this are refused (a corrupt or hostile peer).
inline constexpr uint32_t kMaxPayload = 64u << 20;

// writes one frame (and passes `fd` along when >= 0). Blocking; Unavailable
// when the peer is gone. Never raises SIGPIPE.
absl::Status writeFrame(int sock, MessageType type, std::string_view payload, int fd = -1);

class FrameBuffer;

// reads one frame, waiting until `deadline`; `buffer` keeps bytes of later
// frames read along. DeadlineExceeded, or Unavailable when the peer closed
// or the frame is malformed.
absl::StatusOr<Frame> readFrame(int sock, FrameBuffer& buffer, Deadline deadline);

// accumulates bytes read from a socket and cuts frames.
class FrameBuffer {
 public:
  // reads what `sock` has now. Unavailable on EOF or error.
  absl::Status fill(int sock);
  // the next complete frame, if any. InvalidArgument for an oversized frame.
  absl::StatusOr<bool> next(Frame* frame);
  void append(const char* data, size_t n);

 private:
  std::string buf_;
  size_t start_ = 0;
};

// a listening / connected unix stream socket named `name` in the abstract
// namespace. Unavailable on failure.
absl::StatusOr<int> listenAbstract(const std::string& name);
absl::StatusOr<int> connectAbstract(const std::string& name);

// the uid the process at the other end of unix socket `sock` ran as when it
// connected (or, for a connecting side, when the peer listened): SO_PEERCRED.
absl::StatusOr<uint32_t> peerUid(int sock);
// OK when `sock`'s peer runs as this process's effective uid or as one of
// `allowed_uids`; PermissionDenied naming the uid otherwise (Unavailable
// when the credentials cannot be read).
absl::Status checkPeer(int sock, const std::vector<uint32_t>& allowed_uids);

// whether block `id` of `block_bytes` bytes, in storage that starts
// `storage_offset` bytes into a region of `region_bytes`, lies wholly inside
// the region. Every value comes from the peer: checked without overflow.
bool blockInRegion(int32_t id, uint64_t storage_offset, uint64_t block_bytes, uint64_t region_bytes);

// little-endian packing of frame payloads.
class Writer {
 public:
  Writer& u32(uint32_t v) { return raw(&v, 4); }
  Writer& i32(int32_t v) { return raw(&v, 4); }
  Writer& u64(uint64_t v) { return raw(&v, 8); }
  Writer& bytes(std::string_view s) { return u32(static_cast<uint32_t>(s.size())).raw(s.data(), s.size()); }
  const std::string& str() const { return s_; }

 private:
  Writer& raw(const void* p, size_t n) {
    s_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string s_;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool u32(uint32_t* v) { return raw(v, 4); }
  bool i32(int32_t* v) { return raw(v, 4); }
  bool u64(uint64_t* v) { return raw(v, 8); }
  bool bytes(std::string* out);
  size_t left() const { return s_.size() - pos_; }

 private:
  bool raw(void* p, size_t n);
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace tandem::kv_transport::shm
