// KvSender choosing the transport per transfer from D's endpoint list:
// shared memory when D advertises shm on this host, gRPC otherwise, and gRPC
// again when D's shm socket cannot be reached (another network namespace on
// the same kernel, e.g. separate containers).
#pragma once

#include <memory>

#include "server/kv_transport/grpc_kv_sender.h"
#include "server/kv_transport/shm_kv_sender.h"

namespace tandem::kv_transport {

class AutoKvSender : public KvSender {
 public:
  AutoKvSender(std::unique_ptr<GrpcKvSender> grpc, std::unique_ptr<ShmKvSender> shm)
      : grpc_(std::move(grpc)), shm_(std::move(shm)) {}

  // KvSender
  std::string_view name() const override { return "auto"; }
  absl::StatusOr<KvSendStreamPtr> open(const TransferTarget& target) override;

 private:
  std::unique_ptr<GrpcKvSender> grpc_;
  std::unique_ptr<ShmKvSender> shm_;
};

}  // namespace tandem::kv_transport
