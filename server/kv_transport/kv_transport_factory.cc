#include "server/kv_transport/kv_transport_factory.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/auto_kv_sender.h"
#include "server/kv_transport/multi_kv_receiver.h"
#include "server/kv_transport/ucx_kv_sender.h"

namespace tandem::kv_transport {

absl::StatusOr<TransportChoice> parseTransportChoice(std::string_view name) {
  if (name == "auto") return TransportChoice::kAuto;
  if (name == "grpc") return TransportChoice::kGrpc;
  if (name == "shm") return TransportChoice::kShm;
  if (name == "ucx") return TransportChoice::kUcx;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown KV transport '", absl::string_view(name.data(), name.size()),
      "' (auto, grpc, shm or ucx)"));
}

absl::StatusOr<Endpoint> chooseEndpoint(const std::vector<Endpoint>& endpoints,
                                        TransportChoice choice, std::string_view local_boot_id) {
  const Endpoint* grpc = nullptr;
  const Endpoint* shm = nullptr;
  const Endpoint* ucx = nullptr;
  for (const Endpoint& e : endpoints) {
    if (e.kind == TransportKind::kGrpc && grpc == nullptr) grpc = &e;
    if (e.kind == TransportKind::kShm && shm == nullptr) shm = &e;
    if (e.kind == TransportKind::kUcx && ucx == nullptr) ucx = &e;
  }
  switch (choice) {
    case TransportChoice::kUcx:
      if (ucx != nullptr) return *ucx;
      return absl::NotFoundError("the KV receiver offers no ucx endpoint");
    case TransportChoice::kShm:
      if (shm != nullptr) return *shm;
      return absl::NotFoundError("the KV receiver offers no shm endpoint");
    case TransportChoice::kGrpc:
      if (grpc != nullptr) return *grpc;
      return absl::NotFoundError("the KV receiver offers no grpc endpoint");
    case TransportChoice::kAuto:
      if (shm != nullptr && !shm->boot_id.empty() && shm->boot_id == local_boot_id) return *shm;
      if (grpc != nullptr) return *grpc;
      return absl::NotFoundError("the KV receiver is on another host and offers no grpc endpoint");
  }
  return absl::InternalError("bad transport choice");
}

absl::StatusOr<KvSenderPtr> createKvSender(const KvSenderOptions& options, TransportChoice choice) {
  if (choice == TransportChoice::kUcx) {
    ASSIGN_OR_RETURN(auto ucx, UcxKvSender::create(options));
    return KvSenderPtr(std::move(ucx));
  }
  if (choice == TransportChoice::kGrpc) {
    ASSIGN_OR_RETURN(auto grpc, GrpcKvSender::create(options));
    return KvSenderPtr(std::move(grpc));
  }
  ASSIGN_OR_RETURN(auto shm, ShmKvSender::create(options));
  if (choice == TransportChoice::kShm) return KvSenderPtr(std::move(shm));
  ASSIGN_OR_RETURN(auto grpc, GrpcKvSender::create(options));
  return KvSenderPtr(std::make_unique<AutoKvSender>(std::move(grpc), std::move(shm)));
}

absl::StatusOr<KvReceiverPtr> createKvReceiver(const KvReceiverConfig& config, KvStorage storage,
                                               ShmRegionPtr region) {
  if (config.transports == TransportChoice::kShm && region == nullptr) {
    return absl::InvalidArgumentError("the shm KV transport needs a shared region");
  }
  auto table = std::make_shared<TransferTable>(storage);
  std::vector<KvReceiverPtr> receivers;
  if (config.transports == TransportChoice::kUcx) {
    ASSIGN_OR_RETURN(auto ucx, UcxKvReceiver::create(config.ucx, table));
    receivers.push_back(std::move(ucx));
    return KvReceiverPtr(std::make_unique<MultiKvReceiver>(std::move(table), std::move(receivers)));
  }
  if (config.transports != TransportChoice::kShm) {
    ASSIGN_OR_RETURN(auto grpc, GrpcKvReceiver::create(config.grpc, table));
    receivers.push_back(std::move(grpc));
  }
  if (config.transports != TransportChoice::kGrpc && region != nullptr) {
    ASSIGN_OR_RETURN(auto shm, ShmKvReceiver::create(config.shm, std::move(region), table));
    receivers.push_back(std::move(shm));
  }
  return KvReceiverPtr(std::make_unique<MultiKvReceiver>(std::move(table), std::move(receivers)));
}

}  // namespace tandem::kv_transport
