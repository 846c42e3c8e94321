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

void* CompletionThread::tag(Handler handler) { return new Operation{std::move(handler)}; }

void CompletionThread::run(std::string name) {
  if (!name.empty()) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  void* tag = nullptr;
  bool ok = false;
  // false only once the queue is shut down and every operation drained.
  while (queue_->Next(&tag, &ok)) {
    std::unique_ptr<Operation> op(static_cast<Operation*>(tag));
    op->handler(ok);
  }
}

}  // namespace tandem::grpc_util
