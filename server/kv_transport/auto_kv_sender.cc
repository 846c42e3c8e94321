#include "server/kv_transport/auto_kv_sender.h"

#include "common/status.h"
#include "server/kv_transport/kv_transport_factory.h"

namespace tandem::kv_transport {

absl::StatusOr<KvSendStreamPtr> AutoKvSender::open(const TransferTarget& target) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, parseEndpoints(target.endpoint));
  ASSIGN_OR_RETURN(Endpoint chosen, chooseEndpoint(endpoints, TransportChoice::kAuto, localBootId()));
  if (chosen.kind == TransportKind::kGrpc) return grpc_->open(target);
  auto stream = shm_->open(target);
  // only an unreachable socket falls back; D's verdicts (NotFound, ...) stand.
  if (stream.ok() || stream.status().code() != absl::StatusCode::kUnavailable) return stream;
  if (!chooseEndpoint(endpoints, TransportChoice::kGrpc, localBootId()).ok()) return stream;
  return grpc_->open(target);
}

}  // namespace tandem::kv_transport
