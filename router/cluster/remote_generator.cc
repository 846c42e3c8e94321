#include "router/cluster/remote_generator.h"

#include <algorithm>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::router::cluster {
namespace {

// the load model's clock.
double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool anyRoutableDecoder(const std::vector<WorkerState>& workers) {
  return std::any_of(workers.begin(), workers.end(),
                     [](const WorkerState& w) { return w.routable() && w.decodeCapable(); });
}

// what the routable decode workers take: they serve one model, so the
// smallest context and vocabulary are the safe ones; a request fits the
// cache when it fits the largest (the planner routes it there).
generation::RequestLimits limitsOf(const std::vector<WorkerState>& workers) {
  generation::RequestLimits limits;
  bool any = false;
  bool unbounded_cache = false;
  for (const WorkerState& w : workers) {
    if (!w.routable() || !w.decodeCapable()) continue;
    const int len = w.info.max_model_len();
    const int vocab = w.info.vocab_size();
    limits.max_model_len = any ? std::min(limits.max_model_len, len) : len;
    limits.vocab_size = any ? std::min(limits.vocab_size, vocab) : vocab;
    // a worker that does not say (num_blocks 0) decides for itself.
    const int64_t kv_tokens = int64_t{w.info.num_blocks()} * std::max(1, w.info.block_size());
    unbounded_cache = unbounded_cache || kv_tokens <= 0;
    limits.max_kv_tokens = std::max(limits.max_kv_tokens, kv_tokens);
    any = true;
  }
  if (unbounded_cache) limits.max_kv_tokens = 0;
  return limits;
}

std::string randomPrefix() {
  std::random_device rd;
  return absl::StrFormat("rt%08x", rd());
}

}  // namespace

RemoteGenerator::RemoteGenerator(RemoteGeneratorOptions options, WorkerPool* pool, const KvIndex* index,
                             ClusterMetrics* metrics)
    : options_(options),
      pool_(pool),
      metrics_(metrics),
      planner_(options.planner, index),
      wire_prefix_(randomPrefix()) {
  timers_.runEvery(options_.watchdog_interval, [this] { abandonUnhealthy(); });
}

RemoteGenerator::~RemoteGenerator() { stop(); }

absl::StatusOr<generation::RequestId> RemoteGenerator::submit(std::vector<int32_t> prompt,
                                                generation::SamplingParams params,
                                                OutputCallback callback) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return absl::UnavailableError("the router is shutting down");
  }
  const std::vector<WorkerState> workers = pool_->snapshot();
  if (!anyRoutableDecoder(workers)) return absl::UnavailableError("no healthy decode worker");
  if (absl::Status s = generation::checkRequest(limitsOf(workers), prompt, params); !s.ok()) {
    return s;
  }
  const generation::RequestId id = next_id_.fetch_add(1);
  auto request = std::make_shared<RemoteRequest>(this, id, std::move(prompt), std::move(params),
                                                 std::move(callback));
  request->wait_deadline = Clock::now() + options_.no_worker_timeout;
  {
    std::lock_guard lock(mu_);
    requests_.emplace(id, request);
  }
  if (absl::Status s = attempt(request, /*may_refuse=*/true); !s.ok()) {
    // shed: the caller answers it; no callback comes.
    std::lock_guard lock(mu_);
    requests_.erase(id);
    return s;
  }
  return id;
}

absl::Status RemoteGenerator::attempt(const RemoteRequestPtr& request, bool may_refuse) {
  if (request->cancelled()) {
    request->finish(generation::FinishReason::kAbort);
    return absl::OkStatus();
  }
  if (request->remainingTokens() <= 0) {
    request->finish(generation::FinishReason::kLength);
    return absl::OkStatus();
  }
  if (request->attempts >= options_.max_attempts) {
    request->finish(generation::FinishReason::kError);
    return absl::OkStatus();
  }
  std::map<std::string, int> in_flight;
  {
    std::lock_guard lock(mu_);
    in_flight = in_flight_;
  }
  const std::vector<int32_t> prompt = request->nextPrompt();
  RouteQuery query;
  query.prompt = prompt;
  query.max_tokens = request->remainingTokens();
  query.key = next_route_key_.fetch_add(1);
  query.now_s = nowSeconds();
  // a request submit accepted (a migration: it is already streaming; a
  // retry) goes on past the SLO: only the first attempt is shed, once.
  query.may_shed = may_refuse;
  query.scores_prompt = request->scoresPrompt();
  absl::StatusOr<RouteDecision> route = planner_.plan(query, pool_->snapshot(), in_flight,
                                                      request->failed_on);
  if (absl::IsResourceExhausted(route.status())) {
    if (metrics_ != nullptr) metrics_->countShed();
    return route.status();
  }
  if (!route.ok()) {
    if (Clock::now() >= request->wait_deadline) {
      request->finish(generation::FinishReason::kError);
    } else {
      schedule(request, Clock::now() + options_.retry_delay);
    }
    return absl::OkStatus();
  }
  if (metrics_ != nullptr) {
    metrics_->countRoute(planner_.policyName(), route->outcome, static_cast<int64_t>(prompt.size()),
                         route->predicted_cached_tokens);
  }
  request->route_key = query.key;
  ++request->attempts;
  std::shared_ptr<tandem::v1::Worker::Stub> stub = pool_->stub(route->decode_address);
  const std::string wire_id = absl::StrCat(wire_prefix_, "-", request->id(), "-", request->attempts);
  if (!request->startCall(stub.get(), route->decode_address, route->prefill_address, wire_id)) {
    planner_.finished(query.key, 0, nowSeconds());
    request->finish(generation::FinishReason::kAbort);
  }
  return absl::OkStatus();
}

void RemoteGenerator::routeFirstToken(uint64_t key) { planner_.firstToken(key, nowSeconds()); }

void RemoteGenerator::routeEnded(uint64_t key, int64_t output_tokens) {
  planner_.finished(key, output_tokens, nowSeconds());
}

void RemoteGenerator::retryAfterBrokenCall(const RemoteRequestPtr& request, const grpc::Status& status,
                                         const std::string& address, bool delivered_any) {
  // a connection that fails says the worker is gone: stop routing to it
  // now rather than after the next failed polls.
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) pool_->reportFailure(address);
  request->failed_on.push_back(address);
  request->wait_deadline = Clock::now() + options_.no_worker_timeout;
  if (metrics_ != nullptr) metrics_->countMigration();
  (void)delivered_any;
  schedule(request, Clock::now());
}

void RemoteGenerator::schedule(const RemoteRequestPtr& request, Clock::time_point when) {
  uint64_t key;
  {
    std::lock_guard lock(mu_);
    key = next_wait_++;
    waiting_.emplace(key, request);
  }
  // refused once stop() stopped the timers; stop() then ends the request.
  timers_.runAt(when, [this, key] {
    RemoteRequestPtr due;
    {
      std::lock_guard lock(mu_);
      auto it = waiting_.find(key);
      if (it == waiting_.end()) return;  // stop() ended it
      due = std::move(it->second);
      waiting_.erase(it);
    }
    attempt(due, /*may_refuse=*/false).IgnoreError();
  });
}

void RemoteGenerator::abortWaiting() {
  std::map<uint64_t, RemoteRequestPtr> waiting;
  {
    std::lock_guard lock(mu_);
    waiting.swap(waiting_);
  }
  // stopping: whatever waits for a worker ends now.
  for (auto& [key, r] : waiting) r->finish(generation::FinishReason::kAbort);
}

void RemoteGenerator::abandonUnhealthy() {
  std::vector<RemoteRequestPtr> requests;
  {
    std::lock_guard lock(mu_);
    if (in_flight_.empty()) return;
    requests.reserve(requests_.size());
    for (const auto& [id, r] : requests_) requests.push_back(r);
  }
  std::map<std::string, bool> healthy;
  for (const WorkerState& w : pool_->snapshot()) healthy[w.address] = w.healthy;
  for (const RemoteRequestPtr& r : requests) {
    const std::string address = r->currentAddress();
    if (address.empty()) continue;
    auto it = healthy.find(address);
    if (it == healthy.end() || !it->second) r->abandonIfOn(address);
  }
}

void RemoteGenerator::cancel(generation::RequestId id) {
  RemoteRequestPtr request;
  {
    std::lock_guard lock(mu_);
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    request = it->second;
  }
  // a request waiting for a worker is ended by the timer thread: the
  // caller may be inside this request's callback.
  if (request->cancel()) schedule(request, Clock::now());
}

void RemoteGenerator::callStarted(const std::string& address) {
  std::lock_guard lock(mu_);
  ++in_flight_[address];
  ++live_calls_;
}

void RemoteGenerator::callEnded(const std::string& address) {
  std::lock_guard lock(mu_);
  if (auto it = in_flight_.find(address); it != in_flight_.end() && --it->second <= 0) {
    in_flight_.erase(it);
  }
  --live_calls_;
  calls_cv_.notify_all();
}

void RemoteGenerator::requestDone(generation::RequestId id) {
  std::lock_guard lock(mu_);
  requests_.erase(id);
  calls_cv_.notify_all();
}

void RemoteGenerator::stop() {
  std::vector<RemoteRequestPtr> requests;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (const auto& [id, r] : requests_) requests.push_back(r);
  }
  for (const RemoteRequestPtr& r : requests) {
    if (r->cancel()) schedule(r, Clock::now());
  }
  {
    std::unique_lock lock(mu_);
    // the timer thread finishes requests that wait; calls end with OnDone.
    calls_cv_.wait_for(lock, std::chrono::seconds(10),
                       [this] { return requests_.empty() && live_calls_ == 0; });
  }
  timers_.stop();
  abortWaiting();
  {
    std::unique_lock lock(mu_);
    calls_cv_.wait(lock, [this] { return live_calls_ == 0; });
  }
  // a call that broke meanwhile scheduled a retry the stopped timers refused.
  abortWaiting();
}

int RemoteGenerator::numInFlight() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(requests_.size());
}

bool RemoteGenerator::ready() const {
  for (const WorkerState& w : pool_->snapshot()) {
    if (w.routable() && w.decodeCapable()) return true;
  }
  return false;
}

generation::GeneratorLoad RemoteGenerator::load() const {
  generation::GeneratorLoad load;
  for (const WorkerState& w : pool_->snapshot()) {
    if (!w.routable() || !w.has_stats) continue;
    load.num_running += w.stats.num_running();
    load.num_waiting += w.stats.num_waiting();
    load.num_blocks += w.stats.num_blocks();
    load.num_free_blocks += w.stats.num_free_blocks();
  }
  return load;
}

generation::RequestLimits RemoteGenerator::limits() const { return limitsOf(pool_->snapshot()); }

}  // namespace tandem::router::cluster
