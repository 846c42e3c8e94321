// The one thread of a worker that waits for new KV events on behalf of
// every KvEvents call: when events arrive (or every poll interval) it lets
// each call pull its next batch; a call whose write is in flight pulls by
// itself when the write completes. Once the worker is stopping, the calls
// end UNAVAILABLE at the next pass (EngineLoop's KvEventLog::wakeAll makes
// that pass come at once).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/worker/kv_events_call.h"

namespace tandem::worker {

class KvEventsFeed {
 public:
  // starts the thread; `context` (its loop) must outlive stop().
  explicit KvEventsFeed(WorkerContext& context);
  // stop().
  ~KvEventsFeed();
  KvEventsFeed(const KvEventsFeed&) = delete;
  KvEventsFeed& operator=(const KvEventsFeed&) = delete;

  // keeps `call` pulling until it is over.
  void add(std::shared_ptr<KvEventsCall> call);
  // joins the thread (calls still open are dropped: they end when the
  // server shuts down). Idempotent.
  void stop();

 private:
  void run();
  // lets every call pull once; drops those that are over.
  void pullAll();

  WorkerContext& context_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<KvEventsCall>> calls_;  // guarded by mu_
  bool added_ = false;                                // guarded by mu_
  bool stop_ = false;                                 // guarded by mu_
  std::thread thread_;
};

}  // namespace tandem::worker
