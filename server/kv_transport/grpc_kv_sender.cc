#include "server/kv_transport/grpc_kv_sender.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/endpoint.h"
#include "tandem/v1/kv_transfer.grpc.pb.h"

namespace tandem::kv_transport {

namespace {

absl::Status toAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// one transfer: the stream is also the call's reactor. Blocks wait in a queue
// of descriptors (no copy) until the single in-flight write completes, so a
// slow receiver slows the copies, never grows memory.
class GrpcSendStream final : public KvSendStream, public grpc::ClientWriteReactor<v1::KvChunk> {
 public:
  GrpcSendStream(const KvSenderOptions& options, std::shared_ptr<grpc::Channel> channel,
                 std::string transfer_id)
      : options_(options), stub_(v1::KvTransfer::NewStub(channel)),
        transfer_id_(std::move(transfer_id)) {}

  // sends the header (D claims the transfer id with it) and starts the call.
  void start() {
    context_.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    stub_->async()->Push(&context_, &response_, this);
    // held until the last write: send() starts writes from outside the
    // reactor's callbacks, so the call must not end under it.
    AddHold();
    pump();
    StartCall();
  }

  ~GrpcSendStream() override {
    bool release = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!done_) context_.TryCancel();
      release = hold_;
      hold_ = false;
    }
    if (release) RemoveHold();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

  // KvSendStream
  absl::Status send(std::span<const KvBlock> blocks) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      RETURN_IF_ERROR(usableLocked());
      for (const KvBlock& b : blocks) {
        if (b.data == nullptr || b.index < 0) {
          return absl::InvalidArgumentError(absl::StrCat("bad block ", b.index));
        }
        queue_.push_back(b);
      }
    }
    pump();
    return absl::OkStatus();
  }

  absl::Status finish() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_) return absl::FailedPreconditionError("finish() called twice");
      finishing_ = true;
    }
    pump();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return toAbsl(final_);
  }

  uint64_t bytesSent() const override { return bytes_sent_.load(std::memory_order_relaxed); }

  // grpc::ClientWriteReactor
  void OnWriteDone(bool ok) override {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_ = false;
      // a failed write means the call is over; its status comes with OnDone.
      if (!ok) broken_ = true;
      if ((!ok || last_written_) && hold_) {
        hold_ = false;
        release = true;
      }
    }
    if (release) {
      RemoveHold();
    } else {
      pump();
    }
  }

  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    final_ = status;
    cv_.notify_all();
  }

 private:
  // the error send() reports, or OK while blocks are accepted. mu_ held.
  absl::Status usableLocked() const {
    if (done_) {
      return final_.ok() ? absl::FailedPreconditionError("the transfer already ended")
                         : toAbsl(final_);
    }
    if (broken_) return absl::UnavailableError("the transfer's stream broke");
    if (finishing_) return absl::FailedPreconditionError("send() after finish()");
    return absl::OkStatus();
  }

  // starts the next write when none is in flight and there is something to
  // say. Never called with mu_ held: gRPC may run callbacks inline.
  void pump() {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (in_flight_ || done_ || broken_ || last_written_) return;
      if (!header_pending_ && queue_.empty() && !finishing_) return;
      fillChunkLocked();
      in_flight_ = true;
      last = chunk_.last();
      last_written_ = last;
    }
    if (last) {
      StartWriteLast(&chunk_, grpc::WriteOptions());
    } else {
      StartWrite(&chunk_);
    }
  }

  // packs up to chunk_bytes of queued blocks into chunk_, checksumming each
  // block's source bytes right after copying them (still in cache).
  void fillChunkLocked() {
    chunk_.Clear();  // keeps the data string's capacity for the next chunk
    if (header_pending_) {
      chunk_.set_transfer_id(transfer_id_);
      chunk_.set_block_bytes(options_.block_bytes);
      header_pending_ = false;
    }
    std::string* data = chunk_.mutable_data();
    while (!queue_.empty() && data->size() < options_.chunk_bytes) {
      const KvBlock& b = queue_.front();
      const size_t n = std::min(options_.block_bytes - offset_, options_.chunk_bytes - data->size());
      const char* src = static_cast<const char*>(b.data) + offset_;
      v1::KvPiece* piece = chunk_.add_pieces();
      piece->set_index(b.index);
      piece->set_block_hash(b.hash);
      piece->set_offset(offset_);
      piece->set_length(n);
      if (offset_ == 0) checksum_.reset();
      const size_t at = data->size();
      data->append(src, n);
      checksum_.update(src, n);
      if (b.index == options_.corrupt_block_for_test && offset_ == 0) (*data)[at] ^= 0x5a;
      offset_ += n;
      if (offset_ == options_.block_bytes) {
        piece->set_checksum(checksum_.digest());
        queue_.pop_front();
        offset_ = 0;
      }
    }
    bytes_sent_.fetch_add(data->size(), std::memory_order_relaxed);
    if (finishing_ && queue_.empty()) chunk_.set_last(true);
  }

  const KvSenderOptions options_;
  std::unique_ptr<v1::KvTransfer::Stub> stub_;
  const std::string transfer_id_;
  grpc::ClientContext context_;
  v1::KvPushResult response_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<KvBlock> queue_;
  size_t offset_ = 0;        // bytes of queue_.front() already packed
  BlockChecksum checksum_;   // of queue_.front(), so far
  v1::KvChunk chunk_;        // owned by gRPC while in_flight_
  bool header_pending_ = true;
  bool in_flight_ = false;
  bool finishing_ = false;
  bool last_written_ = false;
  bool broken_ = false;
  bool hold_ = true;
  bool done_ = false;
  grpc::Status final_;
  std::atomic<uint64_t> bytes_sent_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcKvSender>> GrpcKvSender::create(const KvSenderOptions& options) {
  if (options.block_bytes == 0 || options.chunk_bytes == 0) {
    return absl::InvalidArgumentError("KV sender needs positive block_bytes and chunk_bytes");
  }
  return std::unique_ptr<GrpcKvSender>(new GrpcKvSender(options));
}

std::shared_ptr<grpc::Channel> GrpcKvSender::channelFor(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& ch = channels_[address];
  if (ch == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    ch = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  return ch;
}

absl::StatusOr<KvSendStreamPtr> GrpcKvSender::open(const TransferTarget& target) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, parseEndpoints(target.endpoint));
  for (const Endpoint& e : endpoints) {
    if (e.kind != TransportKind::kGrpc) continue;
    auto stream = std::make_unique<GrpcSendStream>(options_, channelFor(e.address),
                                                   target.transfer_id);
    stream->start();
    return KvSendStreamPtr(std::move(stream));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no grpc:// endpoint in '", target.endpoint, "'"));
}

}  // namespace tandem::kv_transport
