#include "bench/planner_sim/planner_simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "bench/planner_sim/foresight_policy.h"
#include "bench/planner_sim/sim_profile_model.h"
#include "bench/planner_sim/sim_prefill_worker.h"
#include "common/parallel_jobs.h"
#include "planner/arrival_burst.h"
#include "planner/decision_json.h"
#include "planner/policies.h"
#include "planner/predictors.h"
#include "planner/sla_policy.h"
#include "router/cluster/route_planner.h"

namespace tandem::bench {
namespace {

using planner::Role;
using planner::RoleCounts;
using router::cluster::KvIndex;
using router::cluster::RouteDecision;
using router::cluster::RoutePlanner;
using router::cluster::RoutePlannerOptions;
using router::cluster::RouteQuery;
using router::cluster::WorkerState;

constexpr double kInf = std::numeric_limits<double>::infinity();

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double share(int64_t good, int64_t all) { return all > 0 ? static_cast<double>(good) / static_cast<double>(all) : 1; }

// the busiest part of an interval (planner::LoadSample::peak_request_rate): its half.
constexpr double kPeakWindowShare = 0.5;

void setBurst(planner::LoadSample& s, const std::vector<double>& arrivals) {
  const planner::ArrivalBurst b = planner::arrivalBurst(arrivals, s.interval_s * kPeakWindowShare);
  s.peak_request_rate = b.peak_rate;
  s.arrival_scv = b.scv;
}

// the traffic of each interval of the trace: rate, ISL, OSL and the cached
// fraction one shared cache of everything seen before would give.
std::vector<planner::LoadSample> trafficByInterval(const SimTrace& trace, int block_size, double interval_s) {
  std::vector<planner::LoadSample> out;
  std::vector<double> prompt, cached;
  std::vector<std::vector<double>> arrivals;
  absl::flat_hash_set<kvcache::BlockHash> seen;
  for (const SimRequest& r : trace.requests) {
    const size_t k = static_cast<size_t>(r.arrival_s / interval_s);
    if (out.size() <= k) {
      out.resize(k + 1);
      prompt.resize(k + 1);
      cached.resize(k + 1);
      arrivals.resize(k + 1);
    }
    arrivals[k].push_back(r.arrival_s);
    size_t hit = 0;
    while (hit < r.hashes.size() && seen.contains(r.hashes[hit])) ++hit;
    seen.insert(r.hashes.begin(), r.hashes.end());
    planner::LoadSample& s = out[k];
    s.request_rate += 1;
    s.mean_input_tokens += static_cast<double>(r.prompt_tokens);
    s.mean_output_tokens += static_cast<double>(r.output_tokens);
    prompt[k] += static_cast<double>(r.prompt_tokens);
    const double c = std::min<double>(static_cast<double>(hit * block_size), static_cast<double>(r.prompt_tokens));
    cached[k] += c;
    s.mix.add(static_cast<double>(r.prompt_tokens), static_cast<double>(r.prompt_tokens) - c,
              static_cast<double>(r.output_tokens));
  }
  for (size_t k = 0; k < out.size(); ++k) {
    planner::LoadSample& s = out[k];
    s.time_s = static_cast<double>(k + 1) * interval_s;
    s.interval_s = interval_s;
    if (s.request_rate > 0) {
      s.mean_input_tokens /= s.request_rate;
      s.mean_output_tokens /= s.request_rate;
      s.cached_fraction = cached[k] / prompt[k];
    }
    s.request_rate /= interval_s;
    setBurst(s, arrivals[k]);
  }
  return out;
}

planner::PolicyConfig policyConfig(const planner::WorkerProfile& profile, const PlannerSimOptions& o) {
  planner::PolicyConfig c;
  c.ttft_slo_ms = o.ttft_slo_ms;
  c.itl_slo_ms = o.itl_slo_ms;
  c.interval_s = o.interval_s;
  c.cold_start_s = o.cold_start_s;
  c.burst_quantile = o.burst_quantile;
  c.burst_window_s = o.burst_window_s;
  c.profile = profile;
  return c;
}

// one policy's cluster, from the first arrival until the last request ends.
class ClusterRun {
 public:
  ClusterRun(const SimTrace& trace, const planner::WorkerProfile& profile, const PlannerSimOptions& options,
             std::string policy, RoleCounts initial, std::unique_ptr<planner::ScalingPolicy> scaling)
      : trace_(trace), profile_(profile), options_(options), initial_(initial), scaling_(std::move(scaling)) {
    result_.policy = std::move(policy);
    planner::PredictorOptions po;
    po.horizon = std::max(1, static_cast<int>(std::ceil(options.cold_start_s / options.interval_s)));
    predictor_ = planner::makePredictor(options.predictor, po);
  }

  absl::StatusOr<PlannerPolicyResult> run();
  // each interval's load as the planner saw it (as routed: the prompts'
  // uncached tokens at the workers they went to), in order.
  const std::vector<planner::LoadSample>& observed() const { return observed_; }

 private:
  enum class State { kStarting, kReady, kDraining, kStopped };
  struct Slot {
    Role role;
    std::string address;
    std::unique_ptr<SimPrefillWorker> prefill;
    std::unique_ptr<SimWorker> decode;
    State state = State::kStarting;
    double provisioned_at = 0, ready_at = 0, stopped_at = kInf;
    int awaiting_kv = 0;  // requests a prefill worker will hand this decode worker
    bool idle() const { return prefill ? prefill->idle() : awaiting_kv == 0 && decode->idle(); }
    double nextEventTime() const { return prefill ? prefill->nextEventTime() : decode->nextEventTime(); }
  };
  struct Request {
    double arrival = 0, first_token = -1;
    int decode_slot = -1;
    double prefill_s = 0;  // its own prefill alone: the uncached tokens as routed
    bool local = false;    // prefilled by its decode worker
  };
  MissBucket& bucketOf(int id);

  void addWorker(Role role, double now, double ready_at);
  void stop(int slot, double now);
  void rebuildRoutable();
  void refreshStats();
  absl::Status route(int id, double now);
  // runs worker events, readiness and decisions up to `t`.
  void runUntil(double t);
  void onFirstToken(int id, double now);
  void onFinished(int id, double now);
  void decide(double now);
  RoleCounts paidFor() const;

  const SimTrace& trace_;
  const planner::WorkerProfile& profile_;
  const PlannerSimOptions& options_;
  const RoleCounts initial_;
  std::unique_ptr<planner::ScalingPolicy> scaling_;
  std::unique_ptr<planner::LoadPredictor> predictor_;
  KvIndex index_{router::cluster::KvIndexOptions{.max_blocks = 0}};
  std::unique_ptr<RoutePlanner> router_;
  std::vector<Slot> slots_;
  std::vector<int> live_;  // not stopped
  absl::flat_hash_map<std::string, int> by_address_;
  std::vector<WorkerState> routable_;
  bool routable_dirty_ = true;
  double next_stats_ = 0;
  int next_worker_ = 0;
  std::vector<Request> requests_;
  size_t arrived_ = 0;
  int64_t in_flight_ = 0;
  double next_decision_ = 0;
  double last_event_ = 0;
  // the interval being observed
  int64_t arrivals_ = 0;
  std::vector<double> arrival_times_;
  double isl_sum_ = 0, osl_sum_ = 0, cached_sum_ = 0;
  planner::PromptMix mix_;
  std::vector<double> ttft_ms_, itl_ms_;
  // the whole run
  std::vector<double> all_ttft_ms_, all_itl_ms_;
  int64_t ttft_good_ = 0, itl_good_ = 0, itl_counted_ = 0, misses_ = 0;
  std::vector<char> missed_;
  PlannerPolicyResult result_;
  std::vector<planner::LoadSample> observed_;
  std::vector<double> decode_seconds_;  // by interval: all requests' time in decode
  std::vector<std::pair<int, double>> prefill_done_;
  std::vector<SimOutcome> decode_done_;
};

void ClusterRun::addWorker(Role role, double now, double ready_at) {
  Slot s;
  s.role = role;
  s.address = absl::StrFormat("%s-%d:1", role == Role::kPrefill ? "p" : "d", next_worker_++);
  if (role == Role::kPrefill) {
    s.prefill = std::make_unique<SimPrefillWorker>(s.address, &profile_);
  } else {
    s.decode = std::make_unique<SimWorker>(s.address, profileModel(profile_, options_.block_size), &index_);
  }
  s.provisioned_at = now;
  s.ready_at = ready_at;
  s.state = ready_at <= now ? State::kReady : State::kStarting;
  by_address_[s.address] = static_cast<int>(slots_.size());
  live_.push_back(static_cast<int>(slots_.size()));
  slots_.push_back(std::move(s));
  routable_dirty_ = true;
}

void ClusterRun::stop(int slot, double now) {
  Slot& s = slots_[slot];
  s.state = State::kStopped;
  s.stopped_at = now;
  live_.erase(std::find(live_.begin(), live_.end(), slot));
  if (s.decode) index_.removeWorker(s.address);
  routable_dirty_ = true;
}

void ClusterRun::rebuildRoutable() {
  routable_.clear();
  for (int i : live_) {
    const Slot& s = slots_[i];
    if (s.state != State::kReady) continue;
    WorkerState w;
    w.address = s.address;
    w.has_info = true;
    w.healthy = true;
    w.has_stats = true;
    w.info.set_worker_id(s.address);
    w.info.set_address(s.address);
    w.info.set_role(s.prefill ? tandem::v1::WORKER_ROLE_PREFILL : tandem::v1::WORKER_ROLE_DECODE);
    w.info.set_block_size(options_.block_size);
    w.info.set_num_blocks(static_cast<int32_t>(
        std::min<double>(profile_.kvCapacityTokens() / options_.block_size, INT32_MAX)));
    w.info.set_max_model_len(1 << 30);
    w.stats = s.prefill ? s.prefill->stats() : s.decode->stats();
    routable_.push_back(std::move(w));
  }
  routable_dirty_ = false;
}

void ClusterRun::refreshStats() {
  for (WorkerState& w : routable_) {
    const Slot& s = slots_[by_address_[w.address]];
    w.stats = s.prefill ? s.prefill->stats() : s.decode->stats();
  }
}

absl::Status ClusterRun::route(int id, double now) {
  if (routable_dirty_) {
    rebuildRoutable();
    next_stats_ = now + options_.stats_interval_s;
  } else if (now >= next_stats_) {
    refreshStats();
    next_stats_ = now + options_.stats_interval_s;
  }
  const SimRequest& r = trace_.requests[id];
  RouteQuery query;
  query.hashes = r.hashes;
  query.prompt_tokens = r.prompt_tokens;
  query.max_tokens = static_cast<int>(std::min<int64_t>(r.output_tokens, INT32_MAX));
  query.key = static_cast<uint64_t>(id) + 1;
  query.now_s = now;
  query.may_shed = false;
  absl::StatusOr<RouteDecision> d = router_->plan(query, routable_, {}, {});
  if (!d.ok()) return d.status();
  const int di = by_address_[d->decode_address];
  requests_[id].decode_slot = di;
  SimWorker& dw = *slots_[di].decode;
  const int64_t cached = dw.cachedTokens(r);
  const int64_t fresh = std::max<int64_t>(1, r.prompt_tokens - cached);
  requests_[id].prefill_s =
      profile_.prefillSeconds(static_cast<double>(fresh), static_cast<double>(r.prompt_tokens));
  ++arrivals_;
  arrival_times_.push_back(now);
  ++in_flight_;
  isl_sum_ += static_cast<double>(r.prompt_tokens);
  mix_.add(static_cast<double>(r.prompt_tokens), static_cast<double>(fresh), static_cast<double>(r.output_tokens));
  osl_sum_ += static_cast<double>(r.output_tokens);
  cached_sum_ += static_cast<double>(cached);
  if (!d->prefill_address.empty()) {
    slots_[by_address_[d->prefill_address]].prefill->enqueue(id, fresh, r.prompt_tokens, now);
    ++slots_[di].awaiting_kv;
  } else {
    requests_[id].local = true;
    dw.addLocal(id, &r, fresh, now);
  }
  return absl::OkStatus();
}

void ClusterRun::onFirstToken(int id, double now) {
  Request& q = requests_[id];
  q.first_token = now;
  router_->firstToken(static_cast<uint64_t>(id) + 1, now);
  const double ttft = (now - q.arrival) * 1000;
  ttft_ms_.push_back(ttft);
  all_ttft_ms_.push_back(ttft);
  MissBucket& b = bucketOf(id);
  ++b.requests;
  if (ttft <= options_.ttft_slo_ms) {
    ++ttft_good_;
  } else {
    missed_[id] = 1;
    ++b.ttft_misses;
    if (q.prefill_s * 1000 > options_.ttft_slo_ms) {
      ++b.ttft_misses_service;
    } else if (q.local) {
      ++b.ttft_misses_local;
    }
  }
}

void ClusterRun::onFinished(int id, double now) {
  const Request& q = requests_[id];
  const SimRequest& r = trace_.requests[id];
  router_->finished(static_cast<uint64_t>(id) + 1, r.output_tokens, now);
  --in_flight_;
  ++result_.finished;
  // its time in decode, by interval (LoadSample::decode_requests).
  const double step = options_.interval_s;
  for (double from = q.first_token; from < now;) {
    const size_t k = static_cast<size_t>(from / step);
    const double to = std::min(now, static_cast<double>(k + 1) * step);
    if (decode_seconds_.size() <= k) decode_seconds_.resize(k + 1);
    decode_seconds_[k] += to - from;
    from = to;
  }
  if (r.output_tokens > 1) {
    const double itl = (now - q.first_token) * 1000 / static_cast<double>(r.output_tokens - 1);
    itl_ms_.push_back(itl);
    all_itl_ms_.push_back(itl);
    ++itl_counted_;
    if (itl <= options_.itl_slo_ms) {
      ++itl_good_;
    } else {
      missed_[id] = 1;
      ++bucketOf(id).itl_misses;
    }
  }
  if (missed_[id]) ++misses_;
}

MissBucket& ClusterRun::bucketOf(int id) {
  const int64_t prompt = trace_.requests[id].prompt_tokens;
  for (MissBucket& b : result_.by_prompt) {
    if (prompt <= b.max_prompt_tokens) return b;
  }
  return result_.by_prompt.back();
}

RoleCounts ClusterRun::paidFor() const {
  RoleCounts n;
  for (int i : live_) ++n[slots_[i].role];
  return n;
}

void ClusterRun::decide(double now) {
  planner::LoadSample o;
  o.time_s = now;
  o.interval_s = options_.interval_s;
  o.request_rate = static_cast<double>(arrivals_) / options_.interval_s;
  setBurst(o, arrival_times_);
  if (arrivals_ > 0) {
    o.mean_input_tokens = isl_sum_ / static_cast<double>(arrivals_);
    o.mean_output_tokens = osl_sum_ / static_cast<double>(arrivals_);
    o.cached_fraction = isl_sum_ > 0 ? cached_sum_ / isl_sum_ : 0;
  }
  o.ttft_p50_ms = percentile(ttft_ms_, 50);
  o.ttft_p95_ms = percentile(ttft_ms_, 95);
  o.itl_p50_ms = percentile(itl_ms_, 50);
  o.itl_p95_ms = percentile(itl_ms_, 95);
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  };
  o.ttft_mean_ms = mean(ttft_ms_);
  o.itl_mean_ms = mean(itl_ms_);
  int64_t tg = 0, ig = 0;
  for (double v : ttft_ms_) tg += v <= options_.ttft_slo_ms;
  for (double v : itl_ms_) ig += v <= options_.itl_slo_ms;
  o.ttft_slo_attainment = share(tg, static_cast<int64_t>(ttft_ms_.size()));
  o.itl_slo_attainment = share(ig, static_cast<int64_t>(itl_ms_.size()));
  RoleCounts current;
  double queue_tokens = 0, kv = 0, waiting = 0;
  for (int i : live_) {
    const Slot& s = slots_[i];
    if (s.state == State::kStarting || s.state == State::kReady) ++current[s.role];
    if (s.state != State::kReady) continue;
    ++o.ready[s.role];
    if (s.prefill) {
      queue_tokens += static_cast<double>(s.prefill->queuedTokens());
    } else {
      kv += s.decode->kvUtilization();
      waiting += s.decode->waiting();
    }
  }
  if (o.ready.prefill > 0) o.prefill_queue_tokens = queue_tokens / o.ready.prefill;
  if (o.ready.decode > 0) {
    o.decode_kv_utilization = kv / o.ready.decode;
    o.decode_queue_requests = waiting / o.ready.decode;
  }
  o.mix = mix_;
  observed_.push_back(o);
  predictor_->observe(o);
  const planner::PolicyInputs in{.observed = o, .predicted = predictor_->predict(), .current = current,
                                 .bounds = options_.bounds};
  const planner::ScalingDecision decision = scaling_->decide(in);
  if (options_.record_decisions) {
    result_.decisions.push_back(planner::decisionJson(now, scaling_->name(), in, decision, decision.desired).dump());
  }
  for (Role role : {Role::kPrefill, Role::kDecode}) {
    int delta = decision.desired[role] - current[role];
    if (delta != 0) ++result_.scale_events;
    for (; delta > 0; --delta) addWorker(role, now, now + options_.cold_start_s);
    // fewer: cancel the newest starting ones first, then drain the least busy.
    while (delta < 0) {
      int pick = -1;
      for (int i : live_) {
        const Slot& s = slots_[i];
        if (s.role != role || s.state != State::kStarting) continue;
        if (pick < 0 || s.provisioned_at >= slots_[pick].provisioned_at) pick = i;
      }
      if (pick < 0) {
        double least = kInf;
        for (int i : live_) {
          const Slot& s = slots_[i];
          if (s.role != role || s.state != State::kReady) continue;
          const double busy = s.prefill ? static_cast<double>(s.prefill->queuedTokens())
                                        : s.decode->running() + s.decode->waiting();
          if (busy < least) {
            least = busy;
            pick = i;
          }
        }
      }
      if (pick < 0) break;
      if (slots_[pick].state == State::kStarting || slots_[pick].idle()) {
        stop(pick, now);
      } else {
        slots_[pick].state = State::kDraining;
        routable_dirty_ = true;
      }
      ++delta;
    }
  }
  const RoleCounts paid = paidFor();
  result_.max_workers = std::max(result_.max_workers, paid.total());
  result_.max_prefill = std::max(result_.max_prefill, paid.prefill);
  result_.max_decode = std::max(result_.max_decode, paid.decode);
  result_.timeline.push_back({now, o.request_rate, paid.prefill, paid.decode, o.ttft_slo_attainment,
                              o.itl_slo_attainment});
  arrivals_ = 0;
  arrival_times_.clear();
  isl_sum_ = osl_sum_ = cached_sum_ = 0;
  mix_ = {};
  ttft_ms_.clear();
  itl_ms_.clear();
}

void ClusterRun::runUntil(double t) {
  while (true) {
    // the earliest worker event (a step's end, a start's readiness); on a
    // tie with the planner's turn, the workers go first.
    int next = -1;
    double when = kInf;
    for (int i : live_) {
      const Slot& s = slots_[i];
      const double w = s.state == State::kStarting ? s.ready_at : s.nextEventTime();
      if (w < when) {
        when = w;
        next = i;
      }
    }
    if (next < 0 || when > t || when > next_decision_) {
      if (next_decision_ > t || next_decision_ == kInf) return;
      // the planner's turn: while requests arrive or are in flight.
      if (arrived_ >= trace_.requests.size() && in_flight_ == 0) {
        next_decision_ = kInf;
        continue;
      }
      decide(next_decision_);
      next_decision_ += options_.interval_s;
      continue;
    }
    Slot& s = slots_[next];
    last_event_ = std::max(last_event_, when);
    if (s.state == State::kStarting) {
      s.state = State::kReady;
      routable_dirty_ = true;
      continue;
    }
    if (s.prefill) {
      prefill_done_.clear();
      s.prefill->advanceTo(when, prefill_done_);
      for (const auto& [id, at] : prefill_done_) {
        onFirstToken(id, at);
        const SimRequest& r = trace_.requests[id];
        --slots_[requests_[id].decode_slot].awaiting_kv;
        if (r.output_tokens <= 1) {
          onFinished(id, at);
        } else {
          slots_[requests_[id].decode_slot].decode->addRemote(id, &r, at);
        }
      }
    } else {
      decode_done_.clear();
      s.decode->advanceTo(when, decode_done_);
      for (const SimOutcome& o : decode_done_) {
        if (o.kind == SimOutcome::kFirstToken) onFirstToken(o.request, o.time); else onFinished(o.request, o.time);
      }
    }
    // a draining worker that has finished its requests stops (those it
    // handed a first token to are the decode workers' now).
    for (size_t k = 0; k < live_.size();) {
      const int i = live_[k];
      if (slots_[i].state == State::kDraining && slots_[i].idle()) {
        stop(i, when);
      } else {
        ++k;
      }
    }
  }
}

absl::StatusOr<PlannerPolicyResult> ClusterRun::run() {
  const auto wall_start = std::chrono::steady_clock::now();
  if (!predictor_) return absl::InvalidArgumentError("unknown predictor '" + options_.predictor + "'");
  RoutePlannerOptions ro;
  ro.policy = "kv";
  ro.seed = options_.seed * 1000003 + 1;
  // every uncached prompt goes to a prefill worker while one is routable
  // (the planner sizes the prefill pool for it), unless D lends its compute
  // while the pool is short (decode_spill).
  ro.max_prefill_queue_tokens = int64_t{1} << 50;
  if (options_.decode_spill) ro.spill_prefill_over_s = options_.ttft_slo_ms / 1000;
  ro.load.default_prefill_tokens_per_s = profile_.prefillTokensPerS(2048);
  ro.load.default_decode_s_per_step = profile_.decodeItlMs(1, 2048) / 1000;
  // the router learns each worker's speed against the profile's shape (the
  // throughput by prompt length), as a router given the profile would.
  ro.load.expected_prefill_tokens_per_s = [profile = profile_](double prompt_tokens) {
    return profile.prefillTokensPerS(prompt_tokens);
  };
  if (!options_.router_learns_rates) ro.load.sample_weight = ro.load.prefill_sample_weight = 0;
  absl::StatusOr<std::unique_ptr<RoutePlanner>> router = RoutePlanner::create(ro, &index_);
  if (!router.ok()) return router.status();
  router_ = std::move(*router);

  const size_t n = trace_.requests.size();
  requests_.assign(n, {});
  missed_.assign(n, 0);
  for (int64_t max : {int64_t{2048}, int64_t{8192}, int64_t{32768}, int64_t{65536}, int64_t{98304}, INT64_MAX}) result_.by_prompt.push_back({.max_prompt_tokens = max});
  for (int i = 0; i < initial_.prefill; ++i) addWorker(Role::kPrefill, 0, 0);
  for (int i = 0; i < initial_.decode; ++i) addWorker(Role::kDecode, 0, 0);
  next_decision_ = options_.interval_s;
  size_t next_progress = n / 10;
  for (size_t i = 0; i < n; ++i) {
    const double t = trace_.requests[i].arrival_s;
    runUntil(t);
    requests_[i].arrival = t;
    arrived_ = i + 1;
    last_event_ = std::max(last_event_, t);
    if (absl::Status s = route(static_cast<int>(i), t); !s.ok()) return s;
    if (options_.progress && i + 1 >= next_progress && next_progress > 0) {
      const RoleCounts paid = paidFor();
      std::fprintf(stderr, "  %s: %3.0f%% of the trace (t = %.0f s, prefill %d, decode %d workers)\n",
                   result_.policy.c_str(), 100.0 * static_cast<double>(i + 1) / static_cast<double>(n), t,
                   paid.prefill, paid.decode);
      next_progress += n / 10;
    }
  }
  runUntil(kInf);
  const double end = last_event_;
  for (const Slot& s : slots_) result_.gpu_hours += (std::min(s.stopped_at, end) - s.provisioned_at) / 3600;
  result_.ttft_attainment = share(ttft_good_, static_cast<int64_t>(n));
  result_.itl_attainment = share(itl_good_, itl_counted_);
  result_.slo_misses = misses_;
  result_.ttft_p99_ms = percentile(all_ttft_ms_, 99);
  result_.itl_p99_ms = percentile(all_itl_ms_, 99);
  result_.max_workers = std::max(result_.max_workers, initial_.total());
  result_.max_prefill = std::max(result_.max_prefill, initial_.prefill);
  result_.max_decode = std::max(result_.max_decode, initial_.decode);
  for (size_t k = 0; k < std::min(observed_.size(), decode_seconds_.size()); ++k) {
    observed_[k].decode_requests = decode_seconds_[k] / options_.interval_s;
  }
  result_.sim_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(result_);
}

// the bound at `headroom` on the intervals as static saw them.
absl::StatusOr<PlannerPolicyResult> runBound(const SimTrace& trace, const planner::WorkerProfile& profile,
                                             const PlannerSimOptions& options,
                                             const std::vector<planner::LoadSample>& future, Headroom headroom) {
  auto foresight = std::make_unique<ForesightPolicy>(future, policyConfig(profile, options), headroom);
  // it starts with what the first cold start needs: it knew.
  const RoleCounts start = planner::clampToBounds(foresight->neededFrom(0), options.bounds);
  PlannerSimOptions quiet = options;
  quiet.progress = false;
  return ClusterRun(trace, profile, quiet, "foresight", start, std::move(foresight)).run();
}

// the bound, its headroom the smallest of 1, 1.05, ..., 2 per role that
// meets the targets (the TTFT one searched with decode generous, then
// decode's at it); 2 where none does.
absl::StatusOr<PlannerPolicyResult> runForesight(const SimTrace& trace, const planner::WorkerProfile& profile,
                                                 const PlannerSimOptions& options,
                                                 const std::vector<planner::LoadSample>& future,
                                                 const PlannerPolicyResult& fixed, Headroom* headroom) {
  *headroom = {};
  absl::StatusOr<PlannerPolicyResult> exact = runBound(trace, profile, options, future, *headroom);
  const double ttft_target = std::min(options.target_attainment, fixed.ttft_attainment);
  const double itl_target = std::min(options.target_attainment, fixed.itl_attainment);
  if (!exact.ok() || !options.foresight_calibrate ||
      (exact->ttft_attainment >= ttft_target && exact->itl_attainment >= itl_target)) {
    return exact;
  }
  constexpr int kSteps = 20;  // headroom 1 + 0.05 k
  auto at = [](int k) { return 1 + 0.05 * k; };
  // the smallest step in [lo, kSteps] for which `meets` holds (kSteps if none).
  auto search = [&](auto meets) -> absl::StatusOr<int> {
    int lo = 0, hi = kSteps;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      absl::StatusOr<bool> ok = meets(at(mid));
      if (!ok.ok()) return ok.status();
      if (*ok) hi = mid; else lo = mid + 1;
    }
    return lo;
  };
  // prefill first, unless the exact counts already meet TTFT.
  absl::StatusOr<int> p = exact->ttft_attainment >= ttft_target ? 0 : search([&](double m) -> absl::StatusOr<bool> {
    absl::StatusOr<PlannerPolicyResult> r = runBound(trace, profile, options, future, {m, at(kSteps)});
    if (!r.ok()) return r.status();
    return r->ttft_attainment >= ttft_target;
  });
  if (!p.ok()) return p.status();
  headroom->prefill = at(*p);
  absl::StatusOr<int> d = search([&](double m) -> absl::StatusOr<bool> {
    absl::StatusOr<PlannerPolicyResult> r = runBound(trace, profile, options, future, {headroom->prefill, m});
    if (!r.ok()) return r.status();
    return r->itl_attainment >= itl_target;
  });
  if (!d.ok()) return d.status();
  headroom->decode = at(*d);
  return runBound(trace, profile, options, future, *headroom);
}

}  // namespace

RoleCounts peakSize(const SimTrace& trace, const planner::WorkerProfile& profile, const PlannerSimOptions& options) {
  const planner::SlaPolicy sizing(policyConfig(profile, options));
  RoleCounts peak{1, 1};
  for (const planner::LoadSample& s : trafficByInterval(trace, options.block_size, options.interval_s)) {
    const RoleCounts need = sizing.sizeForInterval(s);
    peak.prefill = std::max(peak.prefill, need.prefill);
    peak.decode = std::max(peak.decode, need.decode);
  }
  return planner::clampToBounds(peak, options.bounds);
}

absl::StatusOr<PlannerSimResult> simulatePlanner(const SimTrace& trace, const planner::WorkerProfile& profile,
                                                 const PlannerSimOptions& options) {
  if (!(options.interval_s > 0)) return absl::InvalidArgumentError("--interval must be positive");
  if (options.cold_start_s < 0) return absl::InvalidArgumentError("--cold-start must not be negative");
  if (options.block_size <= 0) return absl::InvalidArgumentError("--block-size must be positive");
  if (trace.requests.empty()) return absl::InvalidArgumentError("the trace has no requests");
  if (!planner::makePredictor(options.predictor)) {
    return absl::InvalidArgumentError("unknown predictor '" + options.predictor + "'");
  }
  PlannerSimResult result;
  result.trace = trace.name;
  result.requests = static_cast<int64_t>(trace.requests.size());
  result.duration_s = trace.requests.back().arrival_s;
  result.options = options;
  result.static_model_counts = peakSize(trace, profile, options);
  result.static_counts = options.static_counts.total() > 0
                             ? planner::clampToBounds(options.static_counts, options.bounds)
                             : result.static_model_counts;
  // the dynamic policies start sized for the first cold start's traffic.
  planner::SlaPolicy sizing(policyConfig(profile, options));
  const std::vector<planner::LoadSample> traffic = trafficByInterval(trace, options.block_size, options.interval_s);
  RoleCounts initial{1, 1};
  const size_t first = static_cast<size_t>(std::ceil(options.cold_start_s / options.interval_s)) + 1;
  for (size_t k = 0; k < std::min(first, traffic.size()); ++k) {
    const planner::LoadSample& s = traffic[k];
    sizing.observe(s);
    const RoleCounts need = sizing.sizeForMix(s.request_rate, sizing.mix(), sizing.arrivalScv());
    initial.prefill = std::max(initial.prefill, need.prefill);
    initial.decode = std::max(initial.decode, need.decode);
  }
  initial = planner::clampToBounds(initial, options.bounds);

  for (const std::string& name : options.policies) {
    absl::StatusOr<std::unique_ptr<planner::ScalingPolicy>> policy = planner::makePolicy(name, policyConfig(profile, options));
    if (!policy.ok()) return policy.status();
  }
  // the bound sizes each interval as the static cluster saw it (the
  // prompts' uncached tokens as routed to per-worker caches): static runs
  // first when the bound is asked for, reported or not.
  std::vector<std::string> names = options.policies;
  const bool probe = options.foresight && std::find(names.begin(), names.end(), "static") == names.end();
  if (probe) names.push_back("static");
  const size_t n = names.size();
  std::vector<absl::StatusOr<PlannerPolicyResult>> runs(n, absl::UnknownError("not run"));
  std::vector<planner::LoadSample> static_observed;
  auto runOne = [&](size_t i) {
    planner::PolicyConfig config = policyConfig(profile, options);
    config.static_counts = result.static_counts;
    std::unique_ptr<planner::ScalingPolicy> policy = *planner::makePolicy(names[i], config);
    const RoleCounts start = names[i] == "static" ? result.static_counts : initial;
    ClusterRun run(trace, profile, options, names[i], start, std::move(policy));
    runs[i] = run.run();
    if (names[i] == "static") static_observed = run.observed();
  };
  runJobs(n, options.jobs, runOne);
  absl::StatusOr<PlannerPolicyResult> static_run = absl::UnknownError("not run");
  if (probe) {
    static_run = std::move(runs.back());
    runs.pop_back();
  }
  if (options.foresight) {
    const PlannerPolicyResult* fixed = nullptr;
    for (const absl::StatusOr<PlannerPolicyResult>& r : runs) {
      if (r.ok() && r->policy == "static") fixed = &*r;
    }
    if (probe && static_run.ok()) fixed = &*static_run;
    if (fixed == nullptr) return static_run.status();
    Headroom headroom;
    runs.push_back(runForesight(trace, profile, options, static_observed, *fixed, &headroom));
    result.foresight_headroom_prefill = headroom.prefill;
    result.foresight_headroom_decode = headroom.decode;
  }
  for (absl::StatusOr<PlannerPolicyResult>& r : runs) {
    if (!r.ok()) return r.status();
    result.policies.push_back(std::move(*r));
  }
  // savings as a share of the bound's, against static.
  const PlannerPolicyResult* fixed = nullptr;
  const PlannerPolicyResult* bound = nullptr;
  for (const PlannerPolicyResult& p : result.policies) {
    if (p.policy == "static") fixed = &p;
    if (p.policy == "foresight") bound = &p;
  }
  if (fixed != nullptr && bound != nullptr && fixed->gpu_hours - bound->gpu_hours > 1e-9) {
    for (PlannerPolicyResult& p : result.policies) {
      p.fraction_of_possible_savings = (fixed->gpu_hours - p.gpu_hours) / (fixed->gpu_hours - bound->gpu_hours);
    }
  }
  return result;
}

}  // namespace tandem::bench
