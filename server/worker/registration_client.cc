#include "server/worker/registration_client.h"

#include <cstdio>

#include "grpcpp/grpcpp.h"

namespace tandem::worker {
namespace {

constexpr std::chrono::milliseconds kDefaultHeartbeat{1000};
// while the router cannot be reached (restarting), try this often, so a
// restarted router learns its workers within a few hundred ms of listening
// (bench/faults.sh router-restart) rather than a heartbeat later.
constexpr std::chrono::milliseconds kFailingRetry{100};
constexpr std::chrono::milliseconds kCallTimeout{2000};
constexpr std::chrono::milliseconds kDeregisterTimeout{1000};

// reconnect at least every 250 ms, so a restarted router is found at once
// (gRPC's default backoff grows to two minutes).
grpc::ChannelArguments channelArgs() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 250);
  return args;
}

}  // namespace

RegistrationClient::RegistrationClient(std::string router_address, tandem::v1::WorkerInfo info,
                                       const grpc_util::ClusterAuthPtr& auth)
    : router_address_(std::move(router_address)),
      info_(std::move(info)),
      auth_(auth) {
  refreshStub();
  heartbeat_.runAt(TimerQueue::Clock::now(), [this] { heartbeat(); });
}

RegistrationClient::~RegistrationClient() { stop(); }

int RegistrationClient::numRegistered() const {
  std::lock_guard lock(mu_);
  return registered_;
}

void RegistrationClient::refreshStub() {
  const uint64_t generation = auth_->tlsGeneration();
  if (stub_ != nullptr && generation == stub_tls_generation_) return;
  stub_ = tandem::v1::Registry::NewStub(auth_->channel(router_address_, channelArgs()));
  stub_tls_generation_ = generation;
}

void RegistrationClient::heartbeat() {
  refreshStub();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  tandem::v1::RegisterResponse response;
  const grpc::Status status = stub_->Register(&ctx, info_, &response);
  std::chrono::milliseconds interval = kDefaultHeartbeat;
  if (status.ok()) {
    if (failing_) {
      std::fprintf(stderr, "tandem worker: registered with the router at %s\n",
                   router_address_.c_str());
    }
    failing_ = false;
    if (response.heartbeat_interval_ms() > 0) {
      interval = std::chrono::milliseconds(response.heartbeat_interval_ms());
    }
  } else {
    interval = kFailingRetry;
    if (!failing_) {
      failing_ = true;
      std::fprintf(stderr, "tandem worker: cannot register with the router at %s (%s); retrying\n",
                   router_address_.c_str(), status.error_message().c_str());
    }
  }
  {
    std::lock_guard lock(mu_);
    if (status.ok()) ++registered_;
  }
  // after stop() began this is refused and the heartbeat ends.
  heartbeat_.runAfter(interval, [this] { heartbeat(); });
}

void RegistrationClient::drain() {
  {
    std::lock_guard lock(mu_);
    if (draining_ || stopping_) return;
    draining_ = true;
  }
  // a router that restarts from now on does not learn this worker again.
  heartbeat_.stop();  // waits for a Register call in progress
  deregister(/*draining=*/true);
}

void RegistrationClient::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  heartbeat_.stop();  // waits for a Register call in progress
  deregister(/*draining=*/false);
}

void RegistrationClient::deregister(bool draining) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kDeregisterTimeout);
  tandem::v1::DeregisterRequest request;
  request.set_worker_id(info_.worker_id());
  request.set_draining(draining);
  tandem::v1::DeregisterResponse response;
  refreshStub();
  (void)stub_->Deregister(&ctx, request, &response);
}

}  // namespace tandem::worker
