// Choosing a transport: shared memory when P and D share a host (D's
// endpoint advertises shm with this host's boot id), gRPC otherwise, or one
// forced by configuration (--kv-transport=auto|grpc|shm|ucx). UCX is never
// chosen automatically: both ends must be configured for it.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/grpc_kv_receiver.h"
#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/shm_kv_receiver.h"
#include "server/kv_transport/shm_region.h"
#include "server/kv_transport/transfer_table.h"
#include "server/kv_transport/ucx_kv_receiver.h"

namespace tandem::kv_transport {

enum class TransportChoice { kAuto, kGrpc, kShm, kUcx };

// "auto", "grpc", "shm" or "ucx"; InvalidArgument otherwise.
absl::StatusOr<TransportChoice> parseTransportChoice(std::string_view name);

// the endpoint a sender on host `local_boot_id` uses: kShm → the shm one,
// kGrpc → the grpc one, kUcx → the ucx one, kAuto → the shm one when its boot id is ours, else
// the grpc one. NotFound when the list lacks the endpoint needed.
absl::StatusOr<Endpoint> chooseEndpoint(const std::vector<Endpoint>& endpoints,
                                        TransportChoice choice, std::string_view local_boot_id);

// P's sender for `choice`: kGrpc / kShm / kUcx give that transport alone; kAuto an
// AutoKvSender choosing per transfer. InvalidArgument for bad options.
absl::StatusOr<KvSenderPtr> createKvSender(const KvSenderOptions& options, TransportChoice choice);

struct KvReceiverConfig {
  // kAuto: gRPC always, and shm too when a region is given; kUcx: UCX alone.
  TransportChoice transports = TransportChoice::kAuto;
  GrpcKvReceiverOptions grpc;
  ShmKvReceiverOptions shm;
  UcxKvReceiverOptions ucx;
};

// D's receiver writing into `storage`. With `region` (which must contain
// the storage) D also serves shm; endpoint() lists every transport served.
// InvalidArgument when shm is forced without a region; the receivers'
// errors otherwise.
absl::StatusOr<KvReceiverPtr> createKvReceiver(const KvReceiverConfig& config, KvStorage storage,
                                               ShmRegionPtr region);

}  // namespace tandem::kv_transport
