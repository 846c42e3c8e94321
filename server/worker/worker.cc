#include "server/worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "kernels/backend_factory.h"
#include "kernels/host_buffer.h"
#include "server/kv_transport/kv_transport_factory.h"
#include "server/worker/metrics_http.h"

namespace tandem::worker {
namespace {

// threads that send the blocks of Prefill calls (each call's sends run one
// at a time; more threads let more transfers proceed side by side).
constexpr int kCallThreads = 4;

// how long shutdown waits for work outside gRPC (prefill jobs, calls to
// prefill workers) after the server stopped; each is bounded by its own
// timeouts, this only guards against a stuck one.
constexpr std::chrono::seconds kWorkGrace{15};

// how often a draining worker checks whether it is idle or past its deadline.
constexpr std::chrono::milliseconds kDrainCheck{100};

bool isWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

std::string advertisedHost(const WorkerOptions& options) {
  if (!options.advertise_host.empty()) return options.advertise_host;
  if (!isWildcard(options.host)) return options.host;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
  return "127.0.0.1";
}

std::string modelName(const WorkerOptions& options) {
  if (!options.model_name.empty()) return options.model_name;
  std::filesystem::path p(options.model_path);
  if (!p.has_filename()) p = p.parent_path();
  return p.stem().string();
}

}  // namespace

absl::StatusOr<WorkerPtr> Worker::create(const WorkerOptions& options) {
  WorkerPtr worker(new Worker());
  absl::Status status = worker->start(options);
  if (!status.ok()) return status;
  return worker;
}

absl::Status Worker::start(const WorkerOptions& options) {
  // the Worker API and the KV receiver listen on options.host.
  RETURN_IF_ERROR(options.cluster_auth->checkListenHost(options.host));
  context_.options = options;
  context_.metrics = &metrics_;
  peers_ = std::make_unique<PrefillPeers>(options.cluster_auth);
  context_.peers = peers_.get();
  const std::string advertise = advertisedHost(options);
  RETURN_IF_ERROR(startEngine(options));
  RETURN_IF_ERROR(startTransport(options, advertise));
  RETURN_IF_ERROR(startServers(options, advertise));
  describeSelf(options, advertise);
  server_->GetHealthCheckService()->SetServingStatus(true);
  if (!options.router_address.empty()) {
    // under drain_mu_: /drain may already be served; a worker draining
    // before it registered never registers.
    std::lock_guard lock(drain_mu_);
    if (!context_.draining.load()) {
      registration_ = std::make_unique<RegistrationClient>(options.router_address, context_.info,
                                                           options.cluster_auth);
    }
  }
  return absl::OkStatus();
}

absl::Status Worker::startEngine(const WorkerOptions& options) {
  // D keeps its KV storage in a memfd so prefill workers on this host write
  // blocks straight into it (shm transport).
  engine::EngineAssemblyOptions engine_options = options.engine;
  const bool host_kv = kernels::backendUsesHostMemory(engine_options.backend);
  if (servesGenerate(options.role) && host_kv) {
    engine_options.kv_storage = [this](size_t bytes) -> absl::StatusOr<kernels::BufferPtr> {
      ASSIGN_OR_RETURN(region_, kv_transport::ShmRegion::create(bytes));
      return kernels::HostBuffer::alias(region_->data(), bytes);
    };
  }
  ASSIGN_OR_RETURN(engine::EngineAssemblyPtr local,
                   engine::EngineAssembly::create(options.model_path, engine_options));
  if (!local->kvInHostMemory()) RETURN_IF_ERROR(startStaging(options, *local));
  const kvcache::KvLayout layout = local->runner().kvLayout();
  context_.block_size = layout.block_size;
  context_.block_bytes = layout.blockBytes();
  num_blocks_ = local->numBlocks();
  max_model_len_ = local->maxModelLen();
  // the runner lives as long as the loop that takes it
  const engine::ModelRunner* runner = &local->runner();
  loop_ = std::make_unique<engine::EngineLoop>(std::move(local));
  if (runner->config().isMoe()) {
    metrics_.setExpertSource([runner] { return runner->expertTokens(); }, runner->config().num_experts);
  }
  context_.loop = loop_.get();
  metrics_.setLoadSource([loop = loop_.get()] { return loop->stats(); });
  metrics_.setKvTierSource([loop = loop_.get()] { return loop->kvTierStats(); });
  executor_ = std::make_unique<CallExecutor>(kCallThreads);
  context_.executor = executor_.get();
  kv_events_feed_ = std::make_unique<KvEventsFeed>(context_);
  context_.kv_events_feed = kv_events_feed_.get();
  return absl::OkStatus();
}

absl::Status Worker::startStaging(const WorkerOptions& options,
                                  const engine::EngineAssembly& local) {
  const size_t block_bytes = local.runner().kvLayout().blockBytes();
  const uint64_t slots = options.kv_staging_bytes / block_bytes;
  if (slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--kv-staging-bytes ", options.kv_staging_bytes,
                                                   " holds no KV block of ", block_bytes,
                                                   " bytes"));
  }
  const int num_slots = static_cast<int>(std::min<uint64_t>(slots, 1 << 30));
  if (servesPrefill(options.role)) {
    ASSIGN_OR_RETURN(send_staging_,
                     engine::KvStaging::create(local.backend(), local.runner(), num_slots));
    context_.send_staging = send_staging_.get();
  }
  if (servesGenerate(options.role)) {
    // D's landing slots are a memfd, so prefill workers on this host (shm)
    // write straight into them, as into a cpu backend's KV storage.
    ASSIGN_OR_RETURN(receive_staging_,
                     engine::KvStaging::create(
                         local.backend(), local.runner(), num_slots,
                         [this](size_t bytes) -> absl::StatusOr<void*> {
                           ASSIGN_OR_RETURN(region_, kv_transport::ShmRegion::create(bytes));
                           return region_->data();
                         }));
    context_.receive_staging = receive_staging_.get();
  }
  return absl::OkStatus();
}

absl::Status Worker::startTransport(const WorkerOptions& options, const std::string& advertise) {
  if (servesGenerate(options.role)) {
    kv_transport::KvReceiverConfig config;
    config.transports = options.kv_transport;
    config.grpc.host = isWildcard(options.host) ? "0.0.0.0" : options.host;
    config.grpc.port = 0;
    config.grpc.advertise_host = advertise;
    config.grpc.cluster_auth = options.cluster_auth;
    // G1 itself, or (KV in device memory) the staging slots blocks land in
    kv_transport::KvStorage storage{region_->data(), context_.block_bytes, num_blocks_};
    if (receive_staging_ != nullptr) storage.num_blocks = receive_staging_->capacity();
    ASSIGN_OR_RETURN(receiver_, kv_transport::createKvReceiver(
                                    config, storage,
                                    options.kv_transport == kv_transport::TransportChoice::kGrpc
                                        ? nullptr
                                        : region_));
    context_.receiver = receiver_.get();
  }
  if (servesPrefill(options.role)) {
    kv_transport::KvSenderOptions sender_options;
    sender_options.block_bytes = context_.block_bytes;
    sender_options.timeout = options.prefill_timeout;
    sender_options.faults = options.kv_faults;
    sender_options.cluster_auth = options.cluster_auth;
    ASSIGN_OR_RETURN(sender_, kv_transport::createKvSender(sender_options, options.kv_transport));
    context_.sender = sender_.get();
  }
  return absl::OkStatus();
}

absl::Status Worker::startServers(const WorkerOptions& options, const std::string& advertise) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  service_ = std::make_unique<WorkerService>(context_);
  grpc::ServerBuilder builder;
  const std::string address = formatHostPort(options.host, options.port);
  builder.AddListeningPort(address, options.cluster_auth->serverCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  if (options.metrics_port >= 0) {
    DrainHooks drain{[this] { beginDrain(); }, [this] { return inFlight(); }};
    ASSIGN_OR_RETURN(http_, startMetricsHttp(options.host, options.metrics_port, &metrics_,
                                             &draining_, std::move(drain)));
    metrics_url_ = absl::StrCat("http://", formatHostPort(advertise, http_->port()), "/metrics");
  }
  return absl::OkStatus();
}

void Worker::describeSelf(const WorkerOptions& options, const std::string& advertise) {
  tandem::v1::WorkerInfo& info = context_.info;
  info.set_worker_id(absl::StrFormat("%016x", kv_transport::randomU64()));
  info.set_address(formatHostPort(advertise, port_));
  info.set_role(options.role);
  info.set_model_path(options.model_path);
  info.set_model_name(modelName(options));
  info.set_max_model_len(max_model_len_);
  info.set_vocab_size(loop_->vocabSize());
  info.set_block_size(context_.block_size);
  info.set_num_blocks(num_blocks_);
  int64_t lower_tier_blocks = 0;
  for (const kvcache::KvTierStats& tier : loop_->kvTierStats()) {
    if (tier.tier != kvcache::KvTier::kDevice) lower_tier_blocks += tier.capacity_blocks;
  }
  info.set_lower_tier_blocks(lower_tier_blocks);
  info.set_metrics_url(metrics_url_);
  if (receiver_ != nullptr) info.set_kv_endpoint(receiver_->endpoint());
}

Worker::~Worker() { shutdown(std::chrono::milliseconds(0)); }

int Worker::metricsPort() const { return http_ != nullptr ? http_->port() : -1; }

void Worker::beginDrain() {
  std::lock_guard lock(drain_mu_);
  if (context_.draining.exchange(true)) return;
  if (context_.stopping.load()) return;  // shutdown is under way
  std::fprintf(stderr,
               "tandem worker: draining: no new requests; finishing what runs (up to %g s, then "
               "the router migrates it)\n",
               std::chrono::duration<double>(context_.options.drain_timeout).count());
  draining_ = true;
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
  if (registration_ != nullptr) registration_->drain();
  drain_deadline_ = std::chrono::steady_clock::now() + context_.options.drain_timeout;
  drain_timer_ = std::make_unique<TimerQueue>("drain");
  drain_timer_->runEvery(std::chrono::steady_clock::now(), kDrainCheck, [this] { checkDrain(); });
}

void Worker::checkDrain() {
  if (context_.left_routing.load()) return;
  if (inFlight() == 0) {
    leaveRouting("idle");
  } else if (std::chrono::steady_clock::now() >= drain_deadline_) {
    left_at_deadline_ = true;
    leaveRouting("drain deadline passed; the router migrates what still runs");
  }
}

void Worker::leaveRouting(const char* why) {
  std::fprintf(stderr, "tandem worker: leaving routing (%s)\n", why);
  context_.left_routing = true;
  if (registration_ != nullptr) registration_->stop();
  tellLeftRouting();
}

void Worker::tellLeftRouting() {
  {
    std::lock_guard lock(left_mu_);
    router_told_ = true;
  }
  left_cv_.notify_all();
}

void Worker::waitLeftRouting() {
  std::unique_lock lock(left_mu_);
  left_cv_.wait(lock, [this] { return router_told_; });
}

int Worker::inFlight() const {
  const engine::EngineLoopStats stats = loop_->stats();
  return stats.num_running + stats.num_waiting + context_.transfers_in_flight.load();
}

void Worker::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(shutdown_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  {
    // the drain check uses what follows; it ends first (and no drain starts now).
    std::lock_guard lock(drain_mu_);
    context_.stopping = true;
    if (drain_timer_ != nullptr) drain_timer_->stop();
  }
  draining_ = true;
  context_.left_routing = true;
  if (registration_ != nullptr) registration_->stop();
  tellLeftRouting();
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    if (loop_ != nullptr) loop_->kvEvents().wakeAll();
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    server_->Wait();
  }
  // every KvEvents call ended with the server.
  if (kv_events_feed_ != nullptr) kv_events_feed_->stop();
  context_.tracker.waitIdle(kWorkGrace);
  if (http_ != nullptr) http_->shutdown(std::chrono::milliseconds(0));
  // pending transfers end Cancelled: their requests fall back to local
  // prefill, which the loop's stop then aborts.
  receiver_.reset();
  context_.receiver = nullptr;
  if (loop_ != nullptr) loop_->stop();
  context_.tracker.waitIdle(kWorkGrace);
  // prefill calls are over; their last steps ran.
  if (executor_ != nullptr) executor_->stop();
  sender_.reset();
  context_.sender = nullptr;
}

}  // namespace tandem::worker
