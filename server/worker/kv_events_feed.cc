#include "server/worker/kv_events_feed.h"

#include <algorithm>

namespace tandem::worker {
namespace {

// how long one wait for new events lasts: bounds how late a call that
// joined during a pass gets its first events.
constexpr std::chrono::milliseconds kPollWait{200};

}  // namespace

KvEventsFeed::KvEventsFeed(WorkerContext& context) : context_(context) {
  thread_ = std::thread([this] { run(); });
}

KvEventsFeed::~KvEventsFeed() { stop(); }

void KvEventsFeed::add(std::shared_ptr<KvEventsCall> call) {
  {
    std::lock_guard lock(mu_);
    calls_.push_back(std::move(call));
    added_ = true;
  }
  changed_.notify_all();
}

void KvEventsFeed::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  calls_.clear();
}

void KvEventsFeed::pullAll() {
  std::vector<std::shared_ptr<KvEventsCall>> calls;
  {
    std::lock_guard lock(mu_);
    calls = calls_;
    added_ = false;
  }
  std::vector<KvEventsCall*> over;
  for (const auto& call : calls) {
    if (!call->pull()) over.push_back(call.get());
  }
  if (over.empty()) return;
  std::lock_guard lock(mu_);
  std::erase_if(calls_, [&](const auto& c) {
    return std::find(over.begin(), over.end(), c.get()) != over.end();
  });
}

void KvEventsFeed::run() {
  const kvcache::KvEventLog& log = context_.loop->kvEvents();
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    // events after `seen` wake the wait below, even those that arrive
    // while the calls pull.
    const uint64_t seen = log.lastEventId();
    pullAll();
    if (context_.stopping.load()) {
      // the log returns at once now: wait for new calls (they end at once) instead.
      std::unique_lock lock(mu_);
      changed_.wait_for(lock, kPollWait, [&] { return stop_ || added_; });
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (added_) continue;
    }
    log.readAfter(seen, 1, kPollWait).IgnoreError();
  }
}

}  // namespace tandem::worker
