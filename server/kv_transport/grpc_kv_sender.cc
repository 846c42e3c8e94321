#include "server/kv_transport/grpc_kv_sender.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/grpc/cluster_auth.h"
#include "common/grpc/status_mapping.h"
#include "common/status.h"
#include "grpcpp/generic/generic_stub.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/grpc_kv_chunk.h"

namespace tandem::kv_transport {

namespace {

constexpr char kPushMethod[] = "/tandem.v1.KvTransfer/Push";

// how long a stream whose call ended waits for gRPC to release the slices
// over the caller's blocks. gRPC 1.51 has been seen (2 in ~300 refused
// transfers under load, gdb) to keep one such slice after OnDone with all of
// its threads idle, so an unbounded wait could hang finish() forever.
constexpr auto kReleaseGrace = std::chrono::seconds(2);

// counts the slices gRPC still holds over the caller's block bytes, so the
// stream can wait until gRPC let go of every one of them. The count lives on
// the heap: a lease given up after kReleaseGrace stays valid for the release
// callbacks still to come, and the last of them frees it.
class SourceLease {
 public:
  SourceLease() : state_(new State) {}
  SourceLease(const SourceLease&) = delete;
  SourceLease& operator=(const SourceLease&) = delete;

  ~SourceLease() {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->abandoned = true;
      last = state_->held == 0;
    }
    if (last) delete state_;
  }

  // a slice over `bytes` bytes at `data`, released through this lease.
  grpc::Slice slice(const char* data, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ++state_->held;
    }
    return grpc::Slice(const_cast<char*>(data), bytes, &SourceLease::release, state_);
  }

  // the number of slices still held when `grace` ran out; 0 once all are back.
  size_t waitReleased(std::chrono::steady_clock::duration grace) {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait_for(lock, grace, [this] { return state_->held == 0; });
    return state_->held;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    size_t held = 0;
    bool abandoned = false;  // the lease is gone: the last release frees this
  };

  static void release(void* p) {
    auto* state = static_cast<State*>(p);
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      if (--state->held == 0) {
        last = state->abandoned;
        state->cv.notify_all();
      }
    }
    if (last) delete state;
  }

  State* state_;
};

// one piece of a queued block taken into the chunk being prepared.
struct TakenPiece {
  KvBlock block;
  size_t offset = 0;
  size_t length = 0;
  bool last_of_block = false;
};

// one transfer: the stream is also the call's reactor. The call is the
// client-streaming Push, driven through the generic (ByteBuffer) API so a
// chunk's data field is a list of slices over the caller's blocks: nothing is
// copied in user space. While one chunk is written, the next is prepared
// (its blocks checksummed, which also brings them into cache for the
// kernel's copy); blocks wait in a queue of descriptors, so a slow receiver
// slows the sender, never grows memory.
class GrpcSendStream final : public KvSendStream,
                             public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  GrpcSendStream(const KvSenderOptions& options, std::shared_ptr<grpc::Channel> channel,
                 std::string transfer_id)
      : options_(options), stub_(std::move(channel)), transfer_id_(std::move(transfer_id)) {}

  // sends the header (D claims the transfer id with it) and starts the call.
  void start() {
    context_.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    stub_.PrepareBidiStreamingCall(&context_, kPushMethod, grpc::StubOptions(), this);
    // held until the last write: send() starts writes from outside the
    // reactor's callbacks, so the call must not end under it.
    AddHold();
    StartRead(&response_);
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
    waitDone();
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
    waitDone();
    return grpc_util::toAbslStatus(final_);
  }

  uint64_t bytesSent() const override { return bytes_sent_.load(std::memory_order_relaxed); }

  // grpc::ClientBidiReactor
  void OnWriteDone(bool ok) override {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_ = false;
      writing_.Clear();
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

  // D's answer (a KvPushResult) needs no reading: the status says it all.
  void OnReadDone(bool /*ok*/) override {}

  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    final_ = status;
    cv_.notify_all();
  }

 private:
  // waits for the call's end, then until gRPC released the source bytes, or
  // kReleaseGrace: the call has no stream left to send on, so bytes gRPC
  // still wrote from such a slice would be frames of a closed stream, which
  // D discards. (The blocks stay mapped: they are the caller's KV pool.)
  void waitDone() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return done_ && !preparing_; });
      prepared_.Clear();
      writing_.Clear();
    }
    // once: the destructor after finish() must not wait out the grace again
    if (lease_waited_) return;
    lease_waited_ = true;
    if (const size_t held = lease_.waitReleased(kReleaseGrace); held > 0) {
      std::fprintf(stderr,
                   "tandem: gRPC kept %zu slice(s) of transfer %s %lld s after its call ended "
                   "(%s); not waiting longer\n",
                   held, transfer_id_.c_str(),
                   static_cast<long long>(
                       std::chrono::duration_cast<std::chrono::seconds>(kReleaseGrace).count()),
                   final_.error_message().c_str());
    }
  }

  // the error send() reports, or OK while blocks are accepted. mu_ held.
  absl::Status usableLocked() const {
    if (done_) {
      return final_.ok() ? absl::FailedPreconditionError("the transfer already ended")
                         : grpc_util::toAbslStatus(final_);
    }
    if (broken_) return absl::UnavailableError("the transfer's stream broke");
    if (finishing_) return absl::FailedPreconditionError("send() after finish()");
    return absl::OkStatus();
  }

  // writes the prepared chunk when no write is in flight, and prepares the
  // next one while one is. Never called with mu_ held: gRPC may run
  // callbacks inline. One thread prepares at a time.
  void pump() {
    while (true) {
      bool write = false, last = false;
      std::vector<TakenPiece> taken;
      v1::KvChunk meta;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (done_ || broken_) return;
        if (!in_flight_ && has_prepared_) {
          writing_.Swap(&prepared_);
          has_prepared_ = false;
          in_flight_ = true;
          write = true;
          last = last_written_ = prepared_last_;
        } else if (!has_prepared_ && !preparing_ && !last_prepared_ &&
                   (header_pending_ || !queue_.empty() || finishing_)) {
          preparing_ = true;
          takeLocked(&meta, &taken);
        } else {
          return;
        }
      }
      if (write) {
        if (last) {
          StartWriteLast(&writing_, grpc::WriteOptions());
        } else {
          StartWrite(&writing_);
        }
        continue;
      }
      grpc::ByteBuffer chunk = prepare(meta, taken);
      std::lock_guard<std::mutex> lock(mu_);
      prepared_.Swap(&chunk);
      has_prepared_ = true;
      prepared_last_ = last_prepared_ = meta.last();
      preparing_ = false;
      if (done_) cv_.notify_all();
    }
  }

  // takes up to chunk_bytes of queued blocks into the next chunk. mu_ held.
  void takeLocked(v1::KvChunk* meta, std::vector<TakenPiece>* taken) {
    if (header_pending_) {
      meta->set_transfer_id(transfer_id_);
      meta->set_block_bytes(options_.block_bytes);
      header_pending_ = false;
    }
    size_t bytes = 0;
    while (!queue_.empty() && bytes < options_.chunk_bytes) {
      const KvBlock& b = queue_.front();
      const size_t n = std::min(options_.block_bytes - offset_, options_.chunk_bytes - bytes);
      v1::KvPiece* piece = meta->add_pieces();
      piece->set_index(b.index);
      piece->set_block_hash(b.hash);
      piece->set_offset(offset_);
      piece->set_length(n);
      taken->push_back({b, offset_, n, offset_ + n == options_.block_bytes});
      bytes += n;
      offset_ += n;
      if (offset_ == options_.block_bytes) {
        queue_.pop_front();
        offset_ = 0;
      }
    }
    if (finishing_ && queue_.empty()) meta->set_last(true);
  }

  // checksums the taken pieces' source bytes (setting each block's checksum
  // on its last piece) and wraps them into one message without copying.
  grpc::ByteBuffer prepare(v1::KvChunk& meta, const std::vector<TakenPiece>& taken) {
    std::vector<grpc::Slice> data;
    data.reserve(taken.size());
    size_t bytes = 0;
    for (size_t i = 0; i < taken.size(); ++i) {
      const TakenPiece& t = taken[i];
      const char* src = static_cast<const char*>(t.block.data) + t.offset;
      if (t.offset == 0) checksum_.reset();
      checksum_.update(src, t.length);
      if (options_.faults != nullptr) {
        // an injected fault spoils a copy, never the caller's block.
        grpc::Slice copy(src, t.length);
        options_.faults->inTransit(t.block.index, t.offset,
                                   std::span<uint8_t>(const_cast<uint8_t*>(copy.begin()), t.length));
        data.push_back(std::move(copy));
      } else {
        data.push_back(lease_.slice(src, t.length));
      }
      if (t.last_of_block) meta.mutable_pieces(static_cast<int>(i))->set_checksum(checksum_.digest());
      bytes += t.length;
    }
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    return encodeKvChunk(meta, data);
  }

  const KvSenderOptions options_;
  grpc::GenericStub stub_;
  const std::string transfer_id_;
  grpc::ClientContext context_;
  grpc::ByteBuffer response_;
  SourceLease lease_;
  bool lease_waited_ = false;  // waitDone() waited for it (caller's thread only)

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<KvBlock> queue_;
  size_t offset_ = 0;          // bytes of queue_.front() already taken
  BlockChecksum checksum_;     // of the block being prepared, so far
  grpc::ByteBuffer prepared_;  // the next chunk, ready to write
  grpc::ByteBuffer writing_;   // owned by gRPC while in_flight_
  bool header_pending_ = true;
  bool preparing_ = false;
  bool has_prepared_ = false;
  bool prepared_last_ = false;
  bool last_prepared_ = false;
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
  const auto& auth =
      options_.cluster_auth != nullptr ? options_.cluster_auth : grpc_util::ClusterAuth::none();
  // a reload of the cluster's TLS files makes the next transfer use a new
  // channel with the new certificate; streams open on the old one finish there.
  const uint64_t generation = auth->tlsGeneration();
  CachedChannel& ch = channels_[address];
  if (ch.channel == nullptr || ch.tls_generation != generation) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    ch.channel = auth->channel(address, args);
    ch.tls_generation = generation;
  }
  return ch.channel;
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
