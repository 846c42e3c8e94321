#include "common/http/response_state.h"

#include <utility>

namespace tandem::http {

void ResponseState::setOnClose(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (complete_) return;
    if (!closed()) {
      on_close_ = std::move(callback);
      return;
    }
  }
  // already closed: run outside the lock, so the callback may use the writer.
  if (callback) callback();
}

void ResponseState::markClosed() {
  std::function<void()> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed()) return;
    closed_.store(true, std::memory_order_release);
    if (!complete_) callback = std::move(on_close_);
    on_close_ = nullptr;
  }
  if (callback) callback();
}

void ResponseState::markComplete() {
  std::lock_guard<std::mutex> lock(mu_);
  complete_ = true;
  on_close_ = nullptr;
}

}  // namespace tandem::http
