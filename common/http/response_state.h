// What a connection and the ResponseWriter of its current request share:
// whether the connection closed, whether the response completed, the
// onClose callback and the count of queued bytes. Both sides may be on
// different threads, so everything here is synchronized.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>

namespace tandem::http {

class ResponseState {
 public:
  // true once the connection closed (client gone, failure, server stop).
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // runs `callback` once when the connection closes before the response
  // completed; at once (on the calling thread) when it already has. A
  // callback registered after the response completed never runs.
  void setOnClose(std::function<void()> callback);

  // the connection closed. Runs the onClose callback (on the calling
  // thread, an I/O thread) when the response had not completed.
  void markClosed();

  // the last byte of the response was written; onClose no longer applies.
  void markComplete();

  // bytes handed to write() and not yet on the socket; 0 once closed,
  // because nothing queued will ever be sent.
  size_t pendingBytes() const {
    return closed() ? 0 : pending_bytes_.load(std::memory_order_relaxed);
  }
  void addPending(size_t bytes) { pending_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void removePending(size_t bytes) { pending_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<bool> closed_{false};
  std::atomic<size_t> pending_bytes_{0};
  std::mutex mu_;  // guards complete_ and on_close_
  bool complete_ = false;
  std::function<void()> on_close_;
};

}  // namespace tandem::http
