// KvReceiver over UCX (UCP): D registers its KV storage with UCX
// (ucp_mem_map) and advertises its worker's address and the storage's rkey
// in its endpoint (ucx_protocol.h). A sender claims a transfer with the
// per-transfer token it was handed (transferEndpoint), learns from D the
// offset of every destination block, writes the blocks with RMA, and names
// each group of blocks whose writes completed; D verifies each block's
// checksum on its own bytes and gives the verdict. With `rma` off (or where
// the storage cannot be registered) blocks arrive as active messages that
// D receives straight into the destination block.
//
// One thread drives D's UCP worker; it sleeps on the worker's event fd.
// A sender that dies is noticed through UCX's peer failure detection where
// the transports have it (TCP, RDMA) and, for a sender on the same host
// (UCX's shared-memory transports have none), through a pidfd on its
// process; otherwise the transfer's deadline ends it.
//
// As with shm, a sender still writing when D ends a transfer (cancel,
// deadline, a bad block) may write its destination blocks until it hears
// of the end (its next send() or finish()).
//
// Security: the endpoint is handed out only through the authenticated
// Prefill RPC, and claiming or completing a transfer takes its token. UCX
// itself does not authenticate: whoever can reach D's UCX transports and
// knows the rkey can write D's registered storage (as with any RDMA
// engine), so run UCX on the cluster's own network.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport {

struct UcxKvReceiverOptions {
  // register the storage for RMA (P writes blocks into it); false: blocks
  // come as active messages (what P also does when it cannot use the rkey).
  bool rma = true;
};

class UcxKvReceiver : public KvReceiver {
 public:
  // starts UCX (UCX_TLS etc. from the environment) and the worker thread.
  // Unavailable when UCX cannot start or register the storage.
  static absl::StatusOr<std::unique_ptr<UcxKvReceiver>> create(const UcxKvReceiverOptions& options,
                                                               std::shared_ptr<TransferTable> table);
  // fails transfers in progress (Unavailable) and stops the thread.
  ~UcxKvReceiver() override;

  // KvReceiver: "ucx://<worker address>?rkey=…&base=…&bytes=…&boot_id=…"
  std::string endpoint() const override { return endpoint_; }
  // endpoint() + "&token=<transfer's token>"; endpoint() when the transfer
  // is not pending (P will then be refused).
  std::string transferEndpoint(const std::string& transfer_id) const override;
  absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done) override {
    return table_->expect(std::move(transfer), std::move(done));
  }
  absl::Status cancel(const std::string& transfer_id) override {
    return table_->cancel(transfer_id);
  }

  class Server;  // the worker thread's state (ucx_kv_receiver.cc)

 private:
  UcxKvReceiver() = default;

  std::shared_ptr<TransferTable> table_;
  std::string endpoint_;
  std::shared_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace tandem::kv_transport
