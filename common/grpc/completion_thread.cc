#include "common/grpc/completion_thread.h"

#include <pthread.h>

#include <utility>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace tandem::grpc_util {
namespace {

struct Operation {
  CompletionThread::Handler handler;
};

// Debian's gRPC is not built with ThreadSanitizer, so the queue's hand-off
// of a tag from the thread that started the operation to this one is
// invisible to it: what that thread wrote before making the tag (the call
// object the handler reads) is ordered before the handler by gRPC; these
// tell TSan so (no-ops in other builds).
void releaseTo(void* op) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(op);
#else
  (void)op;
#endif
}

void acquireFrom(void* op) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(op);
#else
  (void)op;
#endif
}

}  // namespace

CompletionThread::CompletionThread(std::string name, std::unique_ptr<grpc::CompletionQueue> queue)
    : queue_(std::move(queue)) {
  thread_ = std::thread([this, name = std::move(name)]() mutable { run(std::move(name)); });
}

CompletionThread::~CompletionThread() { shutdown(); }

void CompletionThread::shutdown() {
  if (!thread_.joinable()) return;
  queue_->Shutdown();
  thread_.join();
}

void* CompletionThread::tag(Handler handler) {
  auto* op = new Operation{std::move(handler)};
  releaseTo(op);
  return op;
}

void CompletionThread::run(std::string name) {
  if (!name.empty()) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  void* tag = nullptr;
  bool ok = false;
  // false only once the queue is shut down and every operation drained.
  while (queue_->Next(&tag, &ok)) {
    acquireFrom(tag);
    std::unique_ptr<Operation> op(static_cast<Operation*>(tag));
    op->handler(ok);
  }
}

}  // namespace tandem::grpc_util
