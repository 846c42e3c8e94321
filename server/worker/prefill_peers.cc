#include "server/worker/prefill_peers.h"

#include "grpcpp/grpcpp.h"

namespace tandem::worker {

tandem::v1::Worker::Stub* PrefillPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  Slot& slot = stubs_[address];
  const uint64_t generation = auth_->tlsGeneration();
  if (slot.stub == nullptr || slot.tls_generation != generation) {
    if (slot.stub != nullptr) retired_.push_back(std::move(slot.stub));
    // a restarted prefill worker is reachable again within a second.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    slot.stub = tandem::v1::Worker::NewStub(auth_->channel(address, args));
    slot.tls_generation = generation;
  }
  return slot.stub.get();
}

}  // namespace tandem::worker
