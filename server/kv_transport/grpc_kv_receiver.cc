#include "server/kv_transport/grpc_kv_receiver.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/grpc/rejected_call.h"
#include "common/status.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/grpc_kv_chunk.h"
#include "server/kv_transport/kv_push_sink.h"
#include "tandem/v1/kv_transfer.grpc.pb.h"

namespace tandem::kv_transport {

namespace {

grpc::Status toGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// gRPC reads the socket into freshly malloc'ed 1-4 MiB buffers and frees
// them once their chunk is stored. With glibc's dynamic thresholds that
// memory goes back to the kernel (munmap above the mmap threshold, or an
// arena trimming its top past twice it) and is taken again on the next
// read, so each received page was zero-filled by a page fault before the
// kernel copied into it: as much CPU as the copy itself (perf, 2026-11-24).
// Pinning the thresholds at the ceiling glibc's own dynamic rule can reach
// (mmap above 32 MiB, trim past 64 MiB free at an arena's top) keeps the
// buffers mapped and reused. Process-wide; set once, when the first
// receiver starts.
void keepReceiveBuffersMapped() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  });
}

// Finish() may come from the reactor's own callbacks or from the transfer
// table (timeout, cancel) on another thread; it must happen once and never
// after OnDone. Recursive: gRPC may run OnDone inline inside Finish.
struct CallGuard {
  std::recursive_mutex mu;
  bool finished = false;
  bool done = false;
};

// one Push call: the transfer's chunks in, the verdict out.
class PushReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PushReactor(std::shared_ptr<TransferTable> table, grpc::ByteBuffer* response)
      : response_(response),
        guard_(std::make_shared<CallGuard>()),
        sink_(std::move(table), abortFn(guard_)) {
    StartRead(&chunk_);
  }

  // grpc::ServerReadReactor
  void OnReadDone(bool ok) override {
    if (!ok) {
      // the stream ended without the sender's last chunk: it died or gave up.
      absl::Status s = absl::UnavailableError(
          absl::StrCat("the sender's stream ended before it finished transfer ",
                       active_ ? active_->id() : std::string("(none)")));
      if (active_) active_->fail(s);
      finishOnce(s);
      return;
    }
    v1::KvChunk meta;
    KvChunkData data;
    absl::Status s = decodeKvChunk(chunk_, &meta, &data);
    chunk_.Clear();
    if (s.ok()) s = handle(meta, data);
    if (!s.ok()) {
      if (active_) active_->fail(s);
      finishOnce(s);
      return;
    }
    if (meta.last()) {
      absl::Status verdict = active_->finish();
      if (verdict.ok()) {
        v1::KvPushResult result;
        result.set_blocks(active_->numBlocks());
        result.set_bytes(sink_.bytes());
        grpc::Slice slice(result.SerializeAsString());
        *response_ = grpc::ByteBuffer(&slice, 1);
      }
      finishOnce(verdict);
      return;
    }
    std::lock_guard<std::recursive_mutex> lock(guard_->mu);
    if (!guard_->finished) StartRead(&chunk_);
  }

  void OnCancel() override {
    ActiveTransferPtr active;
    {
      std::lock_guard<std::recursive_mutex> lock(guard_->mu);
      active = active_;
    }
    if (active) active->fail(absl::UnavailableError("the sender cancelled the transfer"));
  }

  void OnDone() override {
    {
      std::lock_guard<std::recursive_mutex> lock(guard_->mu);
      guard_->done = true;
    }
    delete this;
  }

 private:
  // a timeout or cancel on D's side cuts the stream off.
  AbortFn abortFn(std::shared_ptr<CallGuard> guard) {
    return [this, guard = std::move(guard)](const absl::Status& s) {
      std::lock_guard<std::recursive_mutex> lock(guard->mu);
      if (guard->finished || guard->done) return;
      guard->finished = true;
      Finish(toGrpc(s));
    };
  }

  void finishOnce(const absl::Status& s) {
    std::lock_guard<std::recursive_mutex> lock(guard_->mu);
    if (guard_->finished || guard_->done) return;
    guard_->finished = true;
    Finish(toGrpc(s));
  }

  // stores the chunk's pieces (their bytes in `data`) into D's blocks.
  absl::Status handle(const v1::KvChunk& chunk, KvChunkData& data) {
    absl::Status s = sink_.store(chunk, data);
    if (active_ == nullptr && sink_.active() != nullptr) {
      std::lock_guard<std::recursive_mutex> lock(guard_->mu);
      active_ = sink_.active();
    }
    return s;
  }

  grpc::ByteBuffer* const response_;
  std::shared_ptr<CallGuard> guard_;
  KvPushSink sink_;
  // sink_.active() once claimed; guarded by guard_->mu for OnCancel.
  ActiveTransferPtr active_;
  grpc::ByteBuffer chunk_;
};

}  // namespace

// Push over raw ByteBuffers: chunks are decoded by grpc_kv_chunk, so block
// bytes go from gRPC's receive slices straight into D's blocks.
class GrpcKvTransferService final
    : public v1::KvTransfer::WithRawCallbackMethod_Push<v1::KvTransfer::Service> {
 public:
  GrpcKvTransferService(std::shared_ptr<TransferTable> table, grpc_util::ClusterAuthPtr auth)
      : table_(std::move(table)), auth_(std::move(auth)) {}

  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext* context,
                                                  grpc::ByteBuffer* response) override {
    if (grpc::Status s = auth_->check(*context); !s.ok()) {
      return grpc_util::rejectedRead<grpc::ByteBuffer>(s);
    }
    return new PushReactor(table_, response);
  }

 private:
  std::shared_ptr<TransferTable> table_;
  const grpc_util::ClusterAuthPtr auth_;
};

absl::StatusOr<std::unique_ptr<GrpcKvReceiver>> GrpcKvReceiver::create(
    const GrpcKvReceiverOptions& options, std::shared_ptr<TransferTable> table) {
  keepReceiveBuffersMapped();
  std::unique_ptr<GrpcKvReceiver> r(new GrpcKvReceiver());
  r->table_ = std::move(table);
  r->service_ = std::make_unique<GrpcKvTransferService>(r->table_, options.cluster_auth);
  auto bracket = [](const std::string& h) {
    return h.find(':') != std::string::npos ? absl::StrCat("[", h, "]") : h;
  };
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(bracket(options.host), ":", options.port),
                           options.cluster_auth->serverCredentials(), &r->port_);
  builder.RegisterService(r->service_.get());
  // chunks are ~1 MiB plus their piece list; leave room for larger ones.
  builder.SetMaxReceiveMessageSize(64 << 20);
  // a large per-stream window: each transfer is a fresh stream, which would
  // otherwise start at HTTP/2's 64 KiB and wait for window updates.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  // let senders use HTTP/2's largest frames (2^24 - 1 bytes) instead of
  // 16 KiB ones: a 1 MiB chunk arrives as one frame, not 64, so it is parsed
  // as a few large slices.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1);
  // read the socket in 1-4 MiB pieces rather than growing from 8 KiB: fewer
  // reads and slices per chunk.
  builder.AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20);
  builder.AddChannelArgument(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 1 << 20);
  builder.AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 4 << 20);
  r->server_ = builder.BuildAndStart();
  if (r->server_ == nullptr || r->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for KV transfers on ", options.host, ":", options.port));
  }
  const std::string& host = options.advertise_host.empty() ? options.host : options.advertise_host;
  r->endpoint_ = formatEndpoint({TransportKind::kGrpc, absl::StrCat(bracket(host), ":", r->port_)});
  return r;
}

GrpcKvReceiver::~GrpcKvReceiver() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
}

}  // namespace tandem::kv_transport
