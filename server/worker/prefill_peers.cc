#include "server/worker/prefill_peers.h"

#include "grpcpp/grpcpp.h"

namespace tandem::worker {

tandem::v1::Worker::Stub* PrefillPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  auto& slot = stubs_[address];
  if (slot == nullptr) {
    // a restarted prefill worker is reachable again within a second.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    slot = tandem::v1::Worker::NewStub(auth_->channel(address, args));
  }
  return slot.get();
}

}  // namespace tandem::worker
