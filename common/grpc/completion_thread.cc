#include "common/grpc/completion_thread.h"

#include <pthread.h>

#include <utility>

namespace tandem::grpc_util {
namespace {

struct Operation {
  CompletionThread::Handler handler;
};

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

void* CompletionThread::makeTag(Handler handler) { return new Operation{std::move(handler)}; }

#if defined(__SANITIZE_THREAD__)
void CompletionThread::lockHandOff() { hand_off_.lock(); }
void CompletionThread::unlockHandOff() { hand_off_.unlock(); }
#else
void CompletionThread::lockHandOff() {}
void CompletionThread::unlockHandOff() {}
#endif

void CompletionThread::run(std::string name) {
  if (!name.empty()) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  void* tag = nullptr;
  bool ok = false;
  // false only once the queue is shut down and every operation drained.
  while (queue_->Next(&tag, &ok)) {
    // the start of this operation (under hand_off_) happened before.
    lockHandOff();
    unlockHandOff();
    std::unique_ptr<Operation> op(static_cast<Operation*>(tag));
    op->handler(ok);
  }
}

}  // namespace tandem::grpc_util
