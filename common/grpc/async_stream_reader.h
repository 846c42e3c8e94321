// One server-streaming call read to its end on a CompletionThread, each step
// after the one before it: onMessage() for every message (false: the call is
// cancelled and read no further), then onDone() with the call's status,
// after which the reader is not used again (a subclass may delete itself
// there). The calls of the router's KV subscriptions are these.
#pragma once

#include <memory>
#include <utility>

#include "common/grpc/completion_thread.h"
#include "common/outstanding.h"
#include "grpcpp/grpcpp.h"

namespace tandem::grpc_util {

template <typename Response>
class AsyncStreamReader {
 public:
  // for a deadline before start, or TryCancel from any thread.
  grpc::ClientContext* context() { return &context_; }

 protected:
  // `alive` is released when the reader is destroyed, after everything of
  // it (its context included) and after a subclass's members.
  AsyncStreamReader(Outstanding::Token alive, CompletionThread* calls)
      : alive_(std::move(alive)), calls_(calls) {}
  virtual ~AsyncStreamReader() = default;

  // starts the call `prepare(context, queue)` makes
  // (stub->PrepareAsyncX(context, request, queue)).
  template <typename Prepare>
  void startReading(Prepare prepare) {
    reader_ = prepare(&context_, calls_->queue());
    calls_->start([this](bool ok) { ok ? read() : finish(); },
                  [this](void* tag) { reader_->StartCall(tag); });
  }

  virtual bool onMessage(Response& message) = 0;
  virtual void onDone(const grpc::Status& status) = 0;

 private:
  void read() {
    calls_->start(
        [this](bool ok) {
          if (ok && onMessage(message_)) return read();
          if (ok) context_.TryCancel();
          finish();
        },
        [this](void* tag) { reader_->Read(&message_, tag); });
  }

  // no read is out: the call's status, then onDone.
  void finish() {
    calls_->start([this](bool) { onDone(status_); },
                  [this](void* tag) { reader_->Finish(&status_, tag); });
  }

  // first, so released last.
  const Outstanding::Token alive_;
  CompletionThread* const calls_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReader<Response>> reader_;
  Response message_;
  grpc::Status status_;
};

}  // namespace tandem::grpc_util
