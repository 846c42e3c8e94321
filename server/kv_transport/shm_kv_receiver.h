// KvReceiver over shared memory (same host): D's KV storage lives in a memfd
// region (ShmRegion) that D's engine uses as its KV storage. A sender
// connects to D's unix socket, claims a transfer, receives the region's fd
// and the destination block ids, copies blocks straight into them and then
// names the blocks it wrote (with their checksums); D checks every block's
// prefix hash and re-reads a random sample of them (verify_one_in) to check
// their checksums on its own bytes while P copies the next ones. Only senders running as D's own uid
// (or an allowed one) are served: the socket is abstract, so the peer's
// credentials (SO_PEERCRED) are checked right after accept.
//
// Wiring D's engine to the region:
//   ShmRegionPtr region;
//   options.kv_storage = [&](size_t bytes) -> absl::StatusOr<kernels::BufferPtr> {
//     ASSIGN_OR_RETURN(region, ShmRegion::create(bytes));
//     return kernels::HostBuffer::alias(region->data(), bytes);
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/shm_region.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport {

struct ShmKvReceiverOptions {
  // abstract unix socket name; empty = "tandem-kv-<pid>-<random>".
  std::string socket_name;
  // uids besides this process's own whose senders are served; a connection
  // from any other uid (SO_PEERCRED) is closed at once.
  std::vector<uint32_t> allowed_peer_uids;
  // D re-reads and checks the checksum of one block in this many (and at
  // least one block of every transfer), chosen at random per transfer after
  // P copied them; 1 = every block. The others are taken on P's checksum of
  // its source. Why sampling is enough on one host:
  // docs/design/disaggregation.md ("Shared memory").
  int verify_one_in = 8;
};

class ShmKvReceiver : public KvReceiver {
 public:
  // listens on the socket. InvalidArgument when `table`'s storage does not
  // lie inside `region`; Unavailable when the socket cannot be bound.
  static absl::StatusOr<std::unique_ptr<ShmKvReceiver>> create(const ShmKvReceiverOptions& options,
                                                               ShmRegionPtr region,
                                                               std::shared_ptr<TransferTable> table);
  // closes every connection (their transfers fail) and stops serving.
  ~ShmKvReceiver() override;

  // KvReceiver: "shm://<socket name>?boot_id=<this host's boot id>"
  std::string endpoint() const override { return endpoint_; }
  absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done) override {
    return table_->expect(std::move(transfer), std::move(done));
  }
  absl::Status cancel(const std::string& transfer_id) override {
    return table_->cancel(transfer_id);
  }

  struct Loop;  // the socket loop's state

 private:
  ShmKvReceiver() = default;

  ShmRegionPtr region_;
  std::shared_ptr<TransferTable> table_;
  std::string endpoint_;
  std::shared_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace tandem::kv_transport
