// What every call a worker serves shares: its options and identity, the
// engine loop, the KV transport ends its role has, metrics, the clients of
// prefill workers, and the bookkeeping shutdown waits on. Owned by Worker;
// outlives every call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/call_executor.h"
#include "server/engine/engine_loop.h"
#include "server/engine/kv_staging.h"
#include "server/kv_transport/kv_transport.h"
#include "server/worker/call_tracker.h"
#include "server/worker/prefill_peers.h"
#include "server/worker/worker_metrics.h"
#include "server/worker/worker_options.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class KvEventsFeed;

struct WorkerContext {
  WorkerOptions options;
  tandem::v1::WorkerInfo info;
  engine::EngineLoop* loop = nullptr;
  // D (decode, both): where remote prefills land; null on a prefill worker.
  kv_transport::KvReceiver* receiver = nullptr;
  // P (prefill, both): pushes prefilled blocks; null on a decode worker.
  kv_transport::KvSender* sender = nullptr;
  // with KV in device memory (a GPU backend) only: P stages the blocks it
  // sends here, D lands the blocks it receives here (the receiver's storage)
  // and uploads them into G1. Null with the cpu backend, whose G1 the
  // transports read and write directly.
  engine::KvStaging* send_staging = nullptr;
  engine::KvStaging* receive_staging = nullptr;
  WorkerMetrics* metrics = nullptr;
  PrefillPeers* peers = nullptr;
  // runs the steps of Prefill calls (block sends) on a few threads.
  CallExecutor* executor = nullptr;
  // wakes KvEvents calls when new events arrive; null: calls send only
  // what is there when they start.
  KvEventsFeed* kv_events_feed = nullptr;
  int block_size = 16;
  size_t block_bytes = 0;

  // engine request ids, unique in this process.
  std::atomic<uint64_t> next_request_id{1};
  // remote prefills (D) and prefill jobs (P) in progress.
  std::atomic<int> transfers_in_flight{0};
  // set when the worker begins draining (Worker::beginDrain): Stats say
  // draining, so routers send no new work and leave its streams be.
  std::atomic<bool> draining{false};
  // set when the draining worker leaves routing (idle, or past its drain
  // deadline): Stats answers UNAVAILABLE, so routers migrate what is left.
  std::atomic<bool> left_routing{false};
  // set when the worker starts shutting down.
  std::atomic<bool> stopping{false};
  // work to wait for before the engine and transport go away.
  CallTracker tracker;

  uint64_t newRequestId() { return next_request_id.fetch_add(1); }
};

}  // namespace tandem::worker
