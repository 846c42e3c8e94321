#include "server/kv_transport/shm_kv_sender.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/block_copy.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/shm_protocol.h"

namespace tandem::kv_transport {

namespace {

using shm::MessageType;

// D is told about copied blocks at least every this many bytes, so it
// checks them while the next ones are copied, whatever the caller's batch
// size. Not smaller: each notice wakes D, and on a busy host a wake-up can
// cost P its time slice; D re-reads only a sample (1 in 8 by default), so
// what is left to check after the last copy stays small.
constexpr size_t kVerifyBatchBytes = 16 << 20;

absl::Status statusFrom(int32_t code, std::string message) {
  if (code == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

// parses a kResult frame into the transfer's final status.
absl::Status resultOf(const shm::Frame& frame) {
  shm::Reader r(frame.payload);
  int32_t code = 0, failed = 0;
  std::string message;
  if (frame.type != MessageType::kResult || !r.i32(&code) || !r.i32(&failed) || !r.bytes(&message)) {
    return absl::UnavailableError("malformed answer from the KV receiver");
  }
  return statusFrom(code, std::move(message));
}

class ShmSendStream final : public KvSendStream {
 public:
  ShmSendStream(const KvSenderOptions& options, int sock, ShmRegionPtr region, char* storage,
                std::vector<int32_t> dst, shm::Deadline deadline, shm::FrameBuffer in)
      : options_(options), sock_(sock), region_(std::move(region)), storage_(storage),
        dst_(std::move(dst)), sent_(dst_.size(), false), deadline_(deadline), in_(std::move(in)) {}

  // closing the socket tells D the sender is gone (if it did not finish).
  ~ShmSendStream() override { close(sock_); }

  // KvSendStream
  absl::Status send(std::span<const KvBlock> blocks) override {
    RETURN_IF_ERROR(checkEarlyResult());
    if (finished_) return absl::FailedPreconditionError("send() after finish()");
    shm::Writer list;
    size_t listed_bytes = 0;
    for (const KvBlock& b : blocks) {
      if (b.index < 0 || static_cast<size_t>(b.index) >= dst_.size() || sent_[b.index] ||
          b.data == nullptr) {
        return fail(absl::InvalidArgumentError(
            absl::StrCat("block index ", b.index, " is out of range, sent twice or empty")));
      }
      sent_[b.index] = true;
      char* dst = storage_ + static_cast<size_t>(dst_[b.index]) * options_.block_bytes;
      const uint64_t checksum = copyWithChecksum(dst, b.data, options_.block_bytes);
      if (options_.faults != nullptr) {
        options_.faults->inTransit(
            b.index, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(dst), options_.block_bytes));
      }
      list.i32(b.index).u64(b.hash).u64(checksum);
      bytes_sent_ += options_.block_bytes;
      listed_bytes += options_.block_bytes;
      // D verifies these while this thread copies the next ones.
      if (listed_bytes >= kVerifyBatchBytes) {
        RETURN_IF_ERROR(flush(list));
        listed_bytes = 0;
      }
    }
    return flush(list);
  }

  absl::Status finish() override {
    if (finished_) return absl::FailedPreconditionError("finish() called twice");
    finished_ = true;
    if (!final_.ok()) return final_;
    absl::Status s = shm::writeFrame(sock_, MessageType::kFinish, "");
    // D may already have answered (and closed): its verdict wins over the
    // broken pipe.
    auto frame = shm::readFrame(sock_, in_, deadline_);
    if (!frame.ok()) return s.ok() ? frame.status() : s;
    return resultOf(*frame);
  }

  uint64_t bytesSent() const override { return bytes_sent_; }

 private:
  // names the blocks listed so far to D for verification.
  absl::Status flush(shm::Writer& list) {
    if (list.str().empty()) return absl::OkStatus();
    absl::Status s = shm::writeFrame(sock_, MessageType::kBlocks, list.str());
    list = shm::Writer();
    return s.ok() ? absl::OkStatus() : fail(verdictAfter(std::move(s)));
  }

  // a write failed: D may have answered (e.g. DataLoss for a corrupt block)
  // and closed before reading it. Its verdict, still in the socket, wins
  // over the broken pipe. D closed its end, so the read does not wait.
  absl::Status verdictAfter(absl::Status write_error) {
    auto frame = shm::readFrame(sock_, in_, deadline_);
    if (!frame.ok()) return write_error;
    absl::Status s = resultOf(*frame);
    return s.ok() ? write_error : s;
  }

  absl::Status fail(absl::Status s) {
    if (final_.ok()) final_ = std::move(s);
    return final_;
  }

  // D answers early only to end the transfer (a bad block, a timeout, a
  // cancel): pick that up without waiting, so no more bytes are copied.
  absl::Status checkEarlyResult() {
    if (!final_.ok()) return final_;
    pollfd p{sock_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return absl::OkStatus();
    auto frame = shm::readFrame(sock_, in_, deadline_);
    if (!frame.ok()) return fail(frame.status());
    absl::Status s = resultOf(*frame);
    return fail(s.ok() ? absl::FailedPreconditionError("the KV receiver ended the transfer") : s);
  }

  const KvSenderOptions options_;
  const int sock_;
  const ShmRegionPtr region_;  // keeps the mapping alive while copying
  char* const storage_;        // D's block 0 in this process
  const std::vector<int32_t> dst_;
  std::vector<bool> sent_;
  const shm::Deadline deadline_;
  shm::FrameBuffer in_;
  absl::Status final_;
  bool finished_ = false;
  uint64_t bytes_sent_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShmKvSender>> ShmKvSender::create(const KvSenderOptions& options) {
  if (options.block_bytes == 0) return absl::InvalidArgumentError("KV sender needs block_bytes");
  return std::unique_ptr<ShmKvSender>(new ShmKvSender(options));
}

absl::StatusOr<ShmRegionPtr> ShmKvSender::mapping(const std::string& address, uint64_t region_id,
                                                  int fd, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Mapping& m = mappings_[address];
  if (m.region != nullptr && m.region_id == region_id && m.region->bytes() == bytes) {
    close(fd);
    return m.region;
  }
  // a new region (D restarted): drop the old mapping so its memory is freed.
  m.region = nullptr;
  ASSIGN_OR_RETURN(m.region, ShmRegion::map(fd, bytes));
  m.region_id = region_id;
  return m.region;
}

absl::StatusOr<KvSendStreamPtr> ShmKvSender::open(const TransferTarget& target) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, parseEndpoints(target.endpoint));
  auto e = std::find_if(endpoints.begin(), endpoints.end(),
                        [](const Endpoint& x) { return x.kind == TransportKind::kShm; });
  if (e == endpoints.end()) {
    return absl::InvalidArgumentError(absl::StrCat("no shm:// endpoint in '", target.endpoint, "'"));
  }
  const shm::Deadline deadline = std::chrono::steady_clock::now() + options_.timeout;
  ASSIGN_OR_RETURN(int sock, shm::connectAbstract(e->address));
  // an abstract socket name can be taken by anyone: make sure D is who it should be.
  if (absl::Status peer = shm::checkPeer(sock, options_.shm_allowed_peer_uids); !peer.ok()) {
    close(sock);
    return peer;
  }
  shm::Writer open;
  open.u64(options_.block_bytes).bytes(target.transfer_id);
  absl::Status s = shm::writeFrame(sock, MessageType::kOpen, open.str());
  shm::FrameBuffer in;
  absl::StatusOr<shm::Frame> frame = s.ok() ? shm::readFrame(sock, in, deadline) : s;
  if (!frame.ok()) {
    close(sock);
    return frame.status();
  }
  shm::Reader r(frame->payload);
  int32_t code = 0;
  uint64_t region_bytes = 0, region_id = 0, storage_offset = 0;
  uint32_t n = 0;
  bool ok = frame->type == MessageType::kOpened && r.i32(&code) && r.u64(&region_bytes) &&
            r.u64(&region_id) && r.u32(&n) && r.u64(&storage_offset);
  std::vector<int32_t> dst(ok ? n : 0);
  for (uint32_t i = 0; ok && i < n; ++i) ok = r.i32(&dst[i]);
  std::string message;
  if (ok && code != 0) ok = r.bytes(&message);
  absl::Status refused = ok ? statusFrom(code, std::move(message))
                            : absl::UnavailableError("malformed answer from the KV receiver");
  if (refused.ok() && frame->fd < 0) refused = absl::UnavailableError("no region fd received");
  // never write outside the region, whatever D says.
  for (int32_t id : dst) {
    if (!refused.ok()) break;
    if (!shm::blockInRegion(id, storage_offset, options_.block_bytes, region_bytes)) {
      refused = absl::InvalidArgumentError(absl::StrCat("block id ", id, " is outside D's region"));
    }
  }
  if (!refused.ok()) {
    if (frame->fd >= 0) close(frame->fd);
    close(sock);
    return refused;
  }
  auto region = mapping(e->address, region_id, frame->fd, region_bytes);
  if (!region.ok()) {
    close(sock);
    return region.status();
  }
  char* storage = static_cast<char*>((*region)->data()) + storage_offset;
  return KvSendStreamPtr(std::make_unique<ShmSendStream>(options_, sock, *std::move(region),
                                                         storage, std::move(dst), deadline,
                                                         std::move(in)));
}

}  // namespace tandem::kv_transport
