// Lets threads outside the server reach its io_context only while the
// io_context lives. ResponseWriters may outlive the server (a generation
// thread still holds one); everything they do on the server's side goes
// through run(), and the server closes the gate before it stops and
// destroys its io_context, so no late post touches a dead io_context.
#pragma once

#include <mutex>
#include <shared_mutex>

namespace tandem::http {

class PostGate {
 public:
  // runs `fn` unless the gate is closed; many threads may run at once.
  // Returns whether it ran.
  template <typename Fn>
  bool run(Fn&& fn) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (!open_) return false;
    fn();
    return true;
  }

  // waits for runs in progress, then refuses every later one.
  void close() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    open_ = false;
  }

 private:
  std::shared_mutex mu_;
  bool open_ = true;
};

}  // namespace tandem::http
