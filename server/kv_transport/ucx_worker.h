// One UCP worker (ucp_worker_h) on a UcxContext, driven by one thread at a
// time: the progress engine of one transport end (D's receiver thread, or
// one of P's connections). Everything but signal() must be called from the
// thread currently driving it.
#pragma once

#include <poll.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/kv_transport/ucx_context.h"

namespace tandem::kv_transport {

class UcxWorker {
 public:
  using Clock = std::chrono::steady_clock;

  // Unavailable when UCX refuses (with its reason).
  static absl::StatusOr<std::unique_ptr<UcxWorker>> create(UcxContextPtr context);
  // the worker's endpoints must be closed first.
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h get() const { return worker_; }
  const UcxContextPtr& context() const { return context_; }
  // the worker's address (binary) a peer connects to.
  const std::string& address() const { return address_; }

  // runs callbacks until UCX has nothing more to do right now.
  void progress();

  // progresses until `done()` or `deadline`; sleeps on the worker's event fd
  // (and `extra` fds) between events. Returns done().
  bool waitUntil(const std::function<bool()>& done, Clock::time_point deadline);

  // sleeps until an event on the worker or on one of `extra` (their
  // revents are set), or `timeout`. Call after progress().
  void sleep(std::chrono::milliseconds timeout, std::span<pollfd> extra = {});

  // wakes a sleep() from any thread.
  void signal();

  // an endpoint to the worker at `address`. With `detect_failure`, UCX's
  // peer failure detection (err_handler called when the peer dies or the
  // link breaks) where the transports support it, none where they do not
  // (UCX's shared-memory transports); without, none (a same-host peer is
  // watched through its pidfd instead).
  absl::StatusOr<ucp_ep_h> connect(std::string_view address, bool detect_failure,
                                   ucp_err_handler_cb_t on_error, void* arg);

  // calls `handler(arg, ...)` for active message `id`, each whole message
  // in one call.
  absl::Status setHandler(unsigned id, ucp_am_recv_callback_t handler, void* arg);

  // sends active message `id` with `payload` (eagerly: control messages
  // are small) and keeps the payload until UCX is done with it. A failure
  // shows up in failedSends().
  void send(ucp_ep_h ep, unsigned id, std::string payload);
  // frees the sends UCX completed; true when none is left.
  bool reapSends();
  // sends that completed with an error since the last call.
  size_t failedSends() { return std::exchange(failed_sends_, 0); }

  // closes `ep` and waits (bounded) until UCX let go of it; `force` for an
  // endpoint whose peer failed (no flush).
  void close(ucp_ep_h ep, bool force);

 private:
  UcxWorker(UcxContextPtr context, ucp_worker_h worker, int efd, std::string address)
      : context_(std::move(context)), worker_(worker), efd_(efd), address_(std::move(address)) {}

  UcxContextPtr context_;
  ucp_worker_h worker_;
  int efd_;
  std::string address_;
  struct PendingSend {
    ucs_status_ptr_t request;
    std::unique_ptr<std::string> payload;
  };
  std::vector<PendingSend> sends_;
  size_t failed_sends_ = 0;
};
using UcxWorkerPtr = std::unique_ptr<UcxWorker>;

// a process's pidfd (Linux 5.3+: readable once the process exited), or -1.
int openPidfd(uint32_t pid);
// whether the process behind `pidfd` exited.
bool pidfdExited(int pidfd);

// an active message's header or data, as bytes.
inline std::string_view amBytes(const void* data, size_t length) {
  return {static_cast<const char*>(data), length};
}

// the status of a finished request (or of an immediate result) and frees it.
ucs_status_t finishRequest(ucs_status_ptr_t request);

}  // namespace tandem::kv_transport
