// One gRPC completion queue drained by one thread of its own: the
// asynchronous calls (and async-service requests) of a component whose
// calls grow with the cluster (a poll and a KV subscription per worker)
// complete there, one after another, so that component runs on a fixed
// number of threads however many workers it talks to.
//
// Why not the callback API: gRPC 1.51's callback API hands every reactor
// callback to its default executor as a "long" job, and that executor adds a
// thread whenever a second one is queued before the first started, up to
// 2 per core, and never gives one back. A router polling 16 workers every
// 250 ms grew it from 1 to 4 threads (tests/cli/serve_threads_test.cc shows
// the count); here the same calls stay on this one thread.
//
// Every operation on queue() is started through start(): its handler runs
// once on the thread with the operation's `ok`, then is freed. A handler
// must not block on another handler of the same thread. Whoever
// owns calls on the queue ends them (TryCancel, then waits for their last
// handler) before this is destroyed: the destructor shuts the queue down
// and drains it, which waits for every operation still pending.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "grpcpp/completion_queue.h"

namespace tandem::grpc_util {

class CompletionThread {
 public:
  using Handler = absl::AnyInvocable<void(bool ok)>;

  // drains `queue` (a ServerCompletionQueue for an async service) on a
  // thread named `name` (at most 15 characters are kept).
  explicit CompletionThread(std::string name,
                            std::unique_ptr<grpc::CompletionQueue> queue =
                                std::make_unique<grpc::CompletionQueue>());
  // shutdown().
  ~CompletionThread();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  grpc::CompletionQueue* queue() { return queue_.get(); }
  // starts one operation: `begin(tag)` hands gRPC the tag (reader->Read(&m,
  // tag), responder->Finish(m, status, tag), ...); `handler(ok)` runs on
  // the thread once it completed. From any thread, a handler included.
  template <typename Begin>
  void start(Handler handler, Begin&& begin) {
    void* tag = makeTag(std::move(handler));
    lockHandOff();
    begin(tag);
    unlockHandOff();
  }
  // shuts the queue down and returns once every pending operation
  // completed and the thread ended (an async server shuts down before its
  // queue, and is destroyed after this). Idempotent.
  void shutdown();

 private:
  static void* makeTag(Handler handler);
  // Debian's gRPC is not built with ThreadSanitizer, so how its queue
  // orders an operation's start (and the gRPC header code inlined there)
  // before its handler is invisible to TSan. In TSan builds an operation
  // starts under hand_off_, which the thread takes before each handler;
  // no-ops in other builds.
  void lockHandOff();
  void unlockHandOff();
  void run(std::string name);

  std::mutex hand_off_;

  const std::unique_ptr<grpc::CompletionQueue> queue_;
  std::thread thread_;
};

}  // namespace tandem::grpc_util
