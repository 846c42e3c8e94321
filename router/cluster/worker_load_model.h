// What the router predicts of each worker's load, for routing: queued
// prefill tokens, running requests, active KV blocks, and how fast it
// prefills and decodes. The router's own decisions count at once (onRouted:
// it must not wait for the next Stats to see the load it just added) and
// leave as their requests produce the first token (the prefill is done) and
// finish; the worker's Stats correct it (the prediction is the larger of the
// router's own count and the reported one: other routers send it work too).
// The KV events do not correct it: they say which blocks a worker caches
// (BlockStored/BlockRemoved on the device tier), not which its running
// requests hold; a finished request's blocks stay cached (evictable) and a
// new one that reuses a prefix stores nothing, so no count of them tracks
// active blocks, queued prefill or running requests. Stats report exactly
// those (num_active_blocks, num_prefill_tokens_queued) every poll; the
// KvIndex keeps what the events do say (the cache) for the overlap term.
//
// Rates are learned online, seeded by defaults: each first token is a
// sample of the worker's prefill speed, each finished request a sample of
// the decode step (time after the first token / tokens after it, a moving
// average). A prefill's throughput depends on the prompt's length (short
// prompts pay fixed costs, long ones attention's quadratic term: 13k
// tokens/s at 128 tokens, 26k at 2-4k, 9k at 128k on the shipped
// MI300X-class profile), so the one learned rate a worker this model had
// made a worker that had served short prompts look slow for a long one, and
// long prompts went behind busy workers while others idled. The model
// therefore learns, per worker, a speed FACTOR against an expected shape
// (`expected_prefill_tokens_per_s(prompt length)`, e.g. a planner profile;
// flat at the default rate when unset), so that one observation at any
// length informs every length: factor = the expected seconds of its recent
// prefills / the seconds they took (moving sums, so a long prefill weighs
// more than a short one). A prefill took the time from its routing, or from
// the worker's previous first token if later, to its first token: in a busy
// period the queue ahead and the first-token overheads drop out. Nothing is
// shared between workers (a curve shared by all, learned from the same
// samples, let stale queue counts inflate one size and attract more work),
// and nothing is learned per length (a ratio per log2 length class on top
// of the factor was tried: learned from noisy first tokens of batched
// workers, classes' ratios drifted per worker and the kv policy's cache hit
// rate in the router simulator fell to round robin's). A worker's queue is timed at its
// requests' own lengths (what the Stats report beyond the router's own at
// the default rate): load() returns the queue's seconds and the rate for a
// prompt of the asked length.
//
// A worker that stalls produces no samples, so the oldest request still
// waiting for its first token also bounds the factor: its expected work
// divided by its age (a stalled worker reads slower and slower). Times are
// seconds on any clock that the caller uses consistently (the simulator's
// virtual time, steady_clock for the router). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tandem::router::cluster {

struct WorkerLoadModelOptions {
  double default_prefill_tokens_per_s = 8000;
  double default_decode_s_per_step = 0.02;
  // weight of a new sample in the decode step's moving average.
  double sample_weight = 0.2;
  // weight of a new sample in the prefill factor's moving sums: lower, as
  // a first token also carries the decode worker's batch wait and the KV
  // transfer (noise that made identical workers look unlike and sent long
  // prompts behind busy ones); a stall still shows at once through the
  // oldest waiting request.
  double prefill_sample_weight = 0.02;
  // first tokens with less prefill work than this teach no rate (noise).
  int64_t min_prefill_sample_tokens = 64;
  // the expected prefill throughput (tokens/s) of a prompt this long, the
  // shape the workers' factors scale; unset: default_prefill_tokens_per_s.
  std::function<double(double prompt_tokens)> expected_prefill_tokens_per_s;
};

struct WorkerLoad {
  double queued_prefill_tokens = 0;  // not yet prefilled, including the router's own
  int64_t running = 0;               // requests running or waiting
  int64_t active_blocks = 0;         // KV blocks held by them
  double prefill_queue_s = 0;        // predicted seconds to prefill the queue
  double prefill_tokens_per_s = 0;   // learned for the asked prompt length (stall-bounded)
  double decode_s_per_step = 0;      // learned
};

class WorkerLoadModel {
 public:
  explicit WorkerLoadModel(WorkerLoadModelOptions options = {});

  // the worker's last reported load (WorkerStats); the same report again
  // (the pool's copy between two polls) changes nothing.
  void observeStats(const std::string& address, double queued_prefill_tokens, int64_t running,
                    int64_t active_blocks);
  // the prediction for `address` at `now`, its prefill rate for a prompt of
  // `prompt_tokens` (0: of unknown length, timed at the default rate).
  WorkerLoad load(const std::string& address, double now, int64_t prompt_tokens = 0) const;

  // a request (`key`, unique among those in flight) sent to `address`
  // with `prefill_tokens` to prefill there (of a `prompt_tokens` prompt,
  // the rest cached; 0: prefill_tokens) and `blocks` KV blocks to hold.
  void onRouted(uint64_t key, const std::string& address, int64_t prefill_tokens, int64_t blocks,
                double now, int64_t prompt_tokens = 0);
  // its first token came (its prefill is done).
  void onFirstToken(uint64_t key, double now);
  // it ended (any way) after `output_tokens` tokens.
  void onFinished(uint64_t key, int64_t output_tokens, double now);
  // forgets the workers for which `keep` is false (they left the pool; their
  // requests still end with onFinished, which then only drops the request).
  void retainWorkers(const std::function<bool(const std::string&)>& keep);
  // workers with an entry (those seen since they last left).
  size_t numWorkers() const;

  const WorkerLoadModelOptions& options() const { return options_; }

 private:
  struct Request {
    std::string address;
    int64_t prefill_tokens = 0;
    int64_t blocks = 0;
    double work = 0;  // prefill tokens ahead of it and its own
    double own_s = 0;   // its own prefill at the expected rate (factor 1)
    double work_s = 0;  // the same of `work`
    double routed_at = 0;
    double first_token_at = -1;
  };
  struct Worker {
    double own_queued = 0;
    int64_t own_running = 0;
    int64_t own_blocks = 0;
    // the last Stats as reported (a repeat of it changes nothing).
    double raw_queued = -1;
    int64_t raw_running = -1;
    int64_t raw_blocks = -1;
    double reported_queued = 0;
    int64_t reported_running = 0;
    int64_t reported_blocks = 0;
    double own_queued_s = 0;  // own_queued at the expected rates
    double speed = 1;         // factor on the expected rates
    // moving sums of the prefill samples' expected and taken seconds.
    double expected_s = 0;
    double taken_s = 0;
    double last_first_token_at = -1e300;
    double decode_step = 0;
    // requests waiting for the first token of a prefill this worker runs
    // (not those another worker prefills: a decode worker waiting for a
    // prefill worker's KV is not stalled): routed_at -> key.
    std::multimap<double, uint64_t> waiting;
  };

  double expectedTokensPerS(double prompt_tokens) const;
  // mu_ held.
  Worker& workerLocked(const std::string& address);
  WorkerLoad loadLocked(const Worker& w, double now, int64_t prompt_tokens) const;
  // the request leaves the worker's prefill queue.
  static void dequeueLocked(Worker& w, const Request& r, uint64_t key);

  const WorkerLoadModelOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Worker> workers_;  // guarded by mu_
  std::unordered_map<uint64_t, Request> requests_;   // guarded by mu_
};

}  // namespace tandem::router::cluster
