// KvReceiver over gRPC streaming (works across hosts): serves
// tandem.v1.KvTransfer on its own gRPC server. Each Push call claims one
// expected transfer and copies its chunks' bytes from gRPC's receive slices
// straight into D's KV storage (no protobuf parse of the data), verifying
// every block's checksum on the stored bytes while they are in cache. Pushes
// must pass the cluster's authentication (cluster_auth) first.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc/cluster_auth.h"
#include "grpcpp/grpcpp.h"
#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport {

struct GrpcKvReceiverOptions {
  // address to bind; port 0 = any free port.
  std::string host = "127.0.0.1";
  int port = 0;
  // host name or address P should dial; empty = `host`.
  std::string advertise_host;
  // listener credentials and the check every Push passes first.
  grpc_util::ClusterAuthPtr cluster_auth = grpc_util::ClusterAuth::none();
};

class GrpcKvTransferService;

class GrpcKvReceiver : public KvReceiver {
 public:
  // starts the server. Unavailable when the address cannot be bound.
  // `table` holds D's storage and may be shared with other receivers.
  static absl::StatusOr<std::unique_ptr<GrpcKvReceiver>> create(
      const GrpcKvReceiverOptions& options, std::shared_ptr<TransferTable> table);
  // cuts off calls in progress, then stops the server.
  ~GrpcKvReceiver() override;

  // KvReceiver
  std::string endpoint() const override { return endpoint_; }
  absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done) override {
    return table_->expect(std::move(transfer), std::move(done));
  }
  absl::Status cancel(const std::string& transfer_id) override {
    return table_->cancel(transfer_id);
  }

  int port() const { return port_; }

 private:
  GrpcKvReceiver() = default;

  std::shared_ptr<TransferTable> table_;
  std::unique_ptr<GrpcKvTransferService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
  int port_ = 0;
};

}  // namespace tandem::kv_transport
