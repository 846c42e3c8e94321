// The one writer of a server-streaming gRPC call (callback API). gRPC allows
// one write in flight per stream: ServerStreamWriter queues the messages
// behind it, in order, and sends the final status once the queue drained,
// exactly once. A client that cancels, or a write that fails (the stream
// broke), closes the writer: what is queued is dropped and later writes are
// refused, so the producer learns to stop.
//
// ServerStreamReactor is the reactor gRPC drives; it forwards its callbacks
// to the writer and to the call's StreamObserver and deletes itself in
// OnDone. The call state (the producer) holds the writer through a
// shared_ptr, so producers that outlive the call (an engine callback after
// the client left) write into a closed writer harmlessly.
//
//   auto* reactor = new ServerStreamReactor<Msg>();
//   auto call = std::make_shared<MyCall>(reactor->writer());
//   reactor->observe(call);            // before returning the reactor
//   return reactor;                    // to gRPC
//   ... call->writer_->write(msg); ... call->writer_->finish(status);
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "grpcpp/grpcpp.h"

namespace tandem::grpc_util {

// the producer's side of a stream's life. Called on gRPC's threads, never
// with the writer's lock held, so an observer may call the writer back.
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  // the client cancelled or a write failed: stop producing (writes are
  // refused from now on). called at most once.
  virtual void onStreamBroken() = 0;
  // a write completed and nothing is queued: a producer that pulls (rather
  // than pushes) writes its next message now.
  virtual void onStreamDrained() {}
  // the call is over (after Finish and the last write); `status` is what
  // the call was finished with (nullopt when gRPC ended it without one).
  virtual void onStreamDone(const std::optional<grpc::Status>& status) {}
};

template <typename Response>
class ServerStreamWriter {
 public:
  // `reactor` must stay valid until onDone().
  explicit ServerStreamWriter(grpc::ServerWriteReactor<Response>* reactor) : reactor_(reactor) {}
  ServerStreamWriter(const ServerStreamWriter&) = delete;
  ServerStreamWriter& operator=(const ServerStreamWriter&) = delete;

  // queues `msg` behind the messages not yet written and starts its write
  // when none is in flight. false, and `msg` dropped, once the writer is
  // closed (finish() called, the client cancelled, a write failed, done).
  bool write(Response msg) {
    std::lock_guard lock(mu_);
    if (closedLocked()) return false;
    queue_.push_back(std::move(msg));
    writeNextLocked();
    return true;
  }

  // ends the call with `status` once every queued message is written. only
  // the first finish counts: false when the writer was already closed.
  bool finish(grpc::Status status) {
    std::lock_guard lock(mu_);
    if (closedLocked()) return false;
    final_status_ = std::move(status);
    writeNextLocked();
    return true;
  }

  // write(msg) then finish(status), atomically: no write can slip between.
  bool writeLast(Response msg, grpc::Status status = grpc::Status::OK) {
    std::lock_guard lock(mu_);
    if (closedLocked()) return false;
    queue_.push_back(std::move(msg));
    final_status_ = std::move(status);
    writeNextLocked();
    return true;
  }

  // true while a write may be started right away: open, nothing queued or
  // in flight.
  bool idle() const {
    std::lock_guard lock(mu_);
    return !closedLocked() && queue_.empty() && !writing_;
  }
  // true once writes are refused.
  bool closed() const {
    std::lock_guard lock(mu_);
    return closedLocked();
  }
  // messages accepted but not yet written (the one in flight included).
  size_t pending() const {
    std::lock_guard lock(mu_);
    return queue_.size();
  }
  // the status the call ends (or ended) with, once decided.
  std::optional<grpc::Status> finalStatus() const {
    std::lock_guard lock(mu_);
    return final_status_;
  }

  // --- the reactor's callbacks (ServerStreamReactor forwards them) ---

  // a write completed; false when it failed: the stream broke, the call is
  // finished CANCELLED and the producer must stop.
  bool onWriteDone(bool ok) {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      queue_.clear();
      broken_ = true;
      if (!finished_ && reactor_ != nullptr) {
        finished_ = true;
        const grpc::Status closed(grpc::StatusCode::CANCELLED, "the stream was closed");
        if (!final_status_) final_status_ = closed;
        reactor_->Finish(closed);
      }
      return false;
    }
    writeNextLocked();
    return true;
  }

  // the client cancelled: drops what is queued and finishes CANCELLED (once
  // the write in flight, if any, completed).
  void onCancel() {
    std::lock_guard lock(mu_);
    broken_ = true;
    // the message being written must live until its OnWriteDone.
    while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
    if (finished_) return;
    final_status_ = grpc::Status::CANCELLED;
    if (!writing_ && reactor_ != nullptr) {
      finished_ = true;
      reactor_->Finish(*final_status_);
    }
  }

  // the reactor is gone: nothing is written from now on.
  void onDone() {
    std::lock_guard lock(mu_);
    reactor_ = nullptr;
    queue_.clear();
  }

 private:
  bool closedLocked() const { return final_status_.has_value() || broken_ || reactor_ == nullptr; }

  void writeNextLocked() {
    if (reactor_ == nullptr || writing_ || finished_) return;
    if (!queue_.empty()) {
      writing_ = true;
      reactor_->StartWrite(&queue_.front());
      return;
    }
    if (final_status_) {
      finished_ = true;
      reactor_->Finish(*final_status_);
    }
  }

  mutable std::mutex mu_;
  grpc::ServerWriteReactor<Response>* reactor_;  // null once done
  std::deque<Response> queue_;                   // front: the write in flight
  bool writing_ = false;
  bool broken_ = false;    // cancelled or a write failed
  bool finished_ = false;  // Finish() called
  std::optional<grpc::Status> final_status_;
};

template <typename Response>
class ServerStreamReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  using WriterPtr = std::shared_ptr<ServerStreamWriter<Response>>;

  ServerStreamReactor() : writer_(std::make_shared<ServerStreamWriter<Response>>(this)) {}

  const WriterPtr& writer() const { return writer_; }
  // who hears of the stream's life; set before the reactor goes to gRPC.
  // null: nobody (a call answered at once with a status).
  void observe(std::shared_ptr<StreamObserver> observer) { observer_ = std::move(observer); }

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override {
    if (!writer_->onWriteDone(ok)) {
      if (observer_ != nullptr) notifyBroken();
    } else if (observer_ != nullptr && writer_->idle()) {
      observer_->onStreamDrained();
    }
  }
  void OnCancel() override {
    writer_->onCancel();
    if (observer_ != nullptr) notifyBroken();
  }
  void OnDone() override {
    writer_->onDone();
    if (observer_ != nullptr) observer_->onStreamDone(writer_->finalStatus());
    delete this;
  }

 private:
  void notifyBroken() {
    std::call_once(broken_once_, [this] { observer_->onStreamBroken(); });
  }

  WriterPtr writer_;
  std::shared_ptr<StreamObserver> observer_;
  std::once_flag broken_once_;
};

}  // namespace tandem::grpc_util
