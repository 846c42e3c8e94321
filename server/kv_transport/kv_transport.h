// The KV transport: moves KV cache blocks computed by a prefill worker (P)
// into blocks a decode worker (D) allocated for them.
//
//   D: receiver->expect({id, dst_block_ids, hashes}, done)   // before P pushes
//      ... tells P (through the Prefill RPC) {receiver->endpoint(), id} ...
//   P: stream = sender->open({endpoint, id})
//      stream->send(blocks of layer group / chunk 1)          // as prefill finishes them
//      stream->send(blocks ...)                               // overlaps with compute
//      status = stream->finish()                              // D verified every block
//   D: done(TransferResult) fires once: ok, or the failure naming the block.
//
// A block is one contiguous range of KvLayout::blockBytes() bytes (every
// layer's K and V), so a transfer is a list of (index, hash, bytes). D stays
// the only authority on where bytes land: P names blocks by their index in
// the transfer and D maps index i to dst_block_ids[i]. Every block travels
// with the XXH3-64 checksum of its bytes, computed by P from its source and
// verified by D on the bytes it stored; a mismatch fails the transfer with
// DataLoss naming the block, so D re-requests or recomputes and never uses it.
//
// Implementations: gRPC streaming (any two hosts), shared memory (same host:
// P copies straight into D's memfd-backed KV storage), UCX (P writes into
// D's registered storage with RMA over whatever UCX picked: shared memory,
// TCP, RDMA). HIP IPC fits the same two interfaces: a sender that writes
// into peer device memory and a receiver that exports its storage under an
// endpoint string.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvcache/prefix_hash.h"
#include "server/kv_transport/kv_fault_injector.h"

namespace tandem::grpc_util {
class ClusterAuth;  // common/grpc/cluster_auth.h
}  // namespace tandem::grpc_util

namespace tandem::kv_transport {

// one block on the sending side.
struct KvBlock {
  // the block's position in the transfer: it lands in D's dst_block_ids[index].
  int32_t index = 0;
  // its chained prefix hash (kvcache/prefix_hash.h); D checks it.
  kvcache::BlockHash hash = 0;
  // blockBytes() host-addressable bytes: the block in P's KV storage (the cpu
  // backend's storage is host memory; a GPU sender stages or uses a transport
  // that reads device memory). Must stay unchanged until finish() returns.
  const void* data = nullptr;
};

// where P pushes: what D handed out for one transfer.
struct TransferTarget {
  // the receiver's endpoint(s), e.g. "grpc://10.0.0.7:7001" or
  // "shm://tandem-kv-123-9f2a?boot_id=…", several separated by ','.
  std::string endpoint;
  std::string transfer_id;
};

// the sending side of one transfer.
class KvSendStream {
 public:
  // destroying a stream that was not finished aborts the transfer: D sees it
  // fail. Blocks until the transport let go of the source bytes (gRPC: or
  // for at most a grace period after the call ended, grpc_kv_sender.cc).
  virtual ~KvSendStream() = default;

  // hands `blocks` to the transport. May return before their bytes moved
  // (gRPC queues them and writes as flow control allows); the caller keeps
  // every block's bytes unchanged until finish() returns. Call it as often as
  // blocks become ready; each index once. Returns the transfer's error once
  // one is known (D refused the id, the connection broke, a bad index), after
  // which the stream accepts nothing more.
  virtual absl::Status send(std::span<const KvBlock> blocks) = 0;

  // declares the transfer complete and waits until D verified and accepted
  // every block: OK, or D's failure (DataLoss naming a corrupt block,
  // NotFound for a transfer D does not expect, FailedPrecondition when blocks
  // are missing, Unavailable / DeadlineExceeded when D cannot be reached in
  // time). Call once; send() is refused afterwards.
  virtual absl::Status finish() = 0;

  // bytes handed to the transport so far (for metrics).
  virtual uint64_t bytesSent() const = 0;
};
using KvSendStreamPtr = std::unique_ptr<KvSendStream>;

struct KvSenderOptions {
  // bytes of one block: KvLayout::blockBytes() of P, equal to D's.
  size_t block_bytes = 0;
  // how long a transfer may take from open() to D's answer.
  std::chrono::milliseconds timeout{30000};
  // gRPC: bytes per streamed message.
  size_t chunk_bytes = size_t{1} << 20;
  // shm: uids besides this process's own a receiver may run as; P refuses
  // to hand blocks to a socket served by any other (SO_PEERCRED).
  std::vector<uint32_t> shm_allowed_peer_uids;
  // faults a test injects into blocks in transit; null (always, outside
  // tests) = none. See kv_fault_injector.h.
  KvFaultInjectorPtr faults;
  // gRPC: how pushes to D authenticate (the cluster secret, TLS); null = none.
  std::shared_ptr<const grpc_util::ClusterAuth> cluster_auth;
};

// P's side: opens transfers to receivers. Thread-safe; streams are
// independent and may run concurrently.
class KvSender {
 public:
  virtual ~KvSender() = default;
  // the transport's name: "grpc", "shm", "ucx", "auto".
  virtual std::string_view name() const = 0;
  // starts a transfer to `target`. InvalidArgument for an endpoint this
  // transport cannot use; errors D reports at once (NotFound for an unknown
  // transfer id) may come here or from the stream's send()/finish().
  virtual absl::StatusOr<KvSendStreamPtr> open(const TransferTarget& target) = 0;
};
using KvSenderPtr = std::unique_ptr<KvSender>;

// what D announces before P pushes.
struct ExpectedTransfer {
  std::string transfer_id;
  // D's blocks, in transfer order: block index i lands in dst_block_ids[i].
  std::vector<int32_t> dst_block_ids;
  // the chained prefix hash of each block, same order and length.
  std::vector<kvcache::BlockHash> hashes;
  // the transfer fails with DeadlineExceeded when not complete by then.
  std::chrono::milliseconds timeout{30000};
};

// how one transfer ended, reported once to D.
struct TransferResult {
  std::string transfer_id;
  // OK when every block arrived and verified. Otherwise: DataLoss (checksum
  // or hash mismatch of block `failed_block`), Unavailable (the sender went
  // away), DeadlineExceeded, Cancelled (D cancelled), FailedPrecondition
  // (the sender finished with blocks missing), InvalidArgument (bad data).
  // On failure the destination blocks hold garbage: recompute or re-request.
  absl::Status status;
  // index in the transfer of the block that failed verification, or -1.
  int failed_block = -1;
  int blocks_received = 0;
  uint64_t bytes_received = 0;
  std::string transport;  // which transport carried it ("grpc", "shm", "ucx"), if any
};
// called exactly once per expected transfer, on a transport thread; keep it
// short. It may call back into the receiver (expect, cancel).
using TransferDoneFn = std::function<void(const TransferResult&)>;

// D's side: owns an endpoint P can reach and writes arriving blocks into D's
// KV storage. Thread-safe.
class KvReceiver {
 public:
  // stops serving; transfers still pending complete with Cancelled first.
  virtual ~KvReceiver() = default;

  // what P needs to reach this receiver (see TransferTarget::endpoint).
  virtual std::string endpoint() const = 0;

  // what P needs for pending transfer `transfer_id`: endpoint(), where a
  // transport whose data path cannot authenticate P by itself (ucx) adds a
  // per-transfer random token P must present. D hands it to P only through
  // an authenticated channel (the Prefill RPC, cluster secret / mTLS).
  virtual std::string transferEndpoint(const std::string& transfer_id) const {
    (void)transfer_id;
    return endpoint();
  }

  // announces a transfer before P pushes it; `done` fires once when it
  // completes, fails, times out or is cancelled. InvalidArgument when ids are
  // out of the storage's range, duplicated, or hashes and ids differ in
  // length; AlreadyExists for a transfer id already pending.
  virtual absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done) = 0;

  // gives up a pending transfer (e.g. D prefills locally instead): its done
  // fires with Cancelled and a sender still pushing is cut off. NotFound when
  // no such transfer is pending. A sender already copying (shm) may still
  // write the destination blocks until its connection closes.
  virtual absl::Status cancel(const std::string& transfer_id) = 0;
};
using KvReceiverPtr = std::unique_ptr<KvReceiver>;

}  // namespace tandem::kv_transport
