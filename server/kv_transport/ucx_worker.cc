#include "server/kv_transport/ucx_worker.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace tandem::kv_transport {

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::create(UcxContextPtr context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  ucs_status_t s = ucp_worker_create(context->get(), &params, &worker);
  if (s != UCS_OK) return ucxError(absl::StatusCode::kUnavailable, "ucp_worker_create", s);
  int efd = -1;
  s = ucp_worker_get_efd(worker, &efd);
  ucp_address_t* address = nullptr;
  size_t length = 0;
  if (s == UCS_OK) s = ucp_worker_get_address(worker, &address, &length);
  if (s != UCS_OK) {
    ucp_worker_destroy(worker);
    return ucxError(absl::StatusCode::kUnavailable, "preparing the UCP worker", s);
  }
  std::string packed(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker, address);
  return std::unique_ptr<UcxWorker>(new UcxWorker(std::move(context), worker, efd, std::move(packed)));
}

UcxWorker::~UcxWorker() {
  // requests still pending are released by UCX as their endpoints close.
  for (PendingSend& p : sends_) ucp_request_free(p.request);
  ucp_worker_destroy(worker_);
}

absl::Status UcxWorker::setHandler(unsigned id, ucp_am_recv_callback_t handler, void* arg) {
  ucp_am_handler_param_t params{};
  params.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  params.id = id;
  params.cb = handler;
  params.arg = arg;
  params.flags = UCP_AM_FLAG_WHOLE_MSG;
  ucs_status_t s = ucp_worker_set_am_recv_handler(worker_, &params);
  if (s != UCS_OK) return ucxError(absl::StatusCode::kInternal, "setting an AM handler", s);
  return absl::OkStatus();
}

void UcxWorker::send(ucp_ep_h ep, unsigned id, std::string payload) {
  auto owned = std::make_unique<std::string>(std::move(payload));
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t request = ucp_am_send_nbx(ep, id, nullptr, 0, owned->data(), owned->size(), &params);
  if (UCS_PTR_IS_ERR(request)) {
    ++failed_sends_;
  } else if (request != nullptr) {
    sends_.push_back({request, std::move(owned)});
  }
}

bool UcxWorker::reapSends() {
  std::erase_if(sends_, [this](PendingSend& p) {
    const ucs_status_t s = ucp_request_check_status(p.request);
    if (s == UCS_INPROGRESS) return false;
    if (s != UCS_OK) ++failed_sends_;
    ucp_request_free(p.request);
    return true;
  });
  return sends_.empty();
}

void UcxWorker::progress() {
  while (ucp_worker_progress(worker_) != 0) {
  }
}

void UcxWorker::sleep(std::chrono::milliseconds timeout, std::span<pollfd> extra) {
  // arming fails with BUSY when events arrived since the last progress.
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;
  std::vector<pollfd> fds;
  fds.reserve(extra.size() + 1);
  fds.push_back({efd_, POLLIN, 0});
  fds.insert(fds.end(), extra.begin(), extra.end());
  if (poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) > 0) {
    for (size_t i = 0; i < extra.size(); ++i) extra[i].revents = fds[i + 1].revents;
  }
}

bool UcxWorker::waitUntil(const std::function<bool()>& done, Clock::time_point deadline) {
  while (true) {
    progress();
    if (done()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    // a bounded sleep: a missed wake-up costs at most this much.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    sleep(std::min(left, std::chrono::milliseconds(50)));
  }
}

void UcxWorker::signal() { ucp_worker_signal(worker_); }

absl::StatusOr<ucp_ep_h> UcxWorker::connect(std::string_view address, bool detect_failure,
                                            ucp_err_handler_cb_t on_error, void* arg) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = detect_failure ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  ucp_ep_h ep = nullptr;
  ucs_status_t s = ucp_ep_create(worker_, &params, &ep);
  if (s != UCS_OK && detect_failure) {
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    s = ucp_ep_create(worker_, &params, &ep);
  }
  if (s != UCS_OK) return ucxError(absl::StatusCode::kUnavailable, "connecting to the peer", s);
  return ep;
}

void UcxWorker::close(ucp_ep_h ep, bool force) {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &params);
  if (!UCS_PTR_IS_PTR(request)) return;
  // a flushing close waits for the peer; a dead one must not hang us.
  waitUntil([&] { return ucp_request_check_status(request) != UCS_INPROGRESS; },
            Clock::now() + std::chrono::seconds(2));
  // (still closing: UCX releases the request when the close ends.)
  ucp_request_free(request);
}

int openPidfd(uint32_t pid) {
#ifdef SYS_pidfd_open
  if (pid == 0) return -1;
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
  (void)pid;
  return -1;
#endif
}

bool pidfdExited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return pidfd >= 0 && poll(&p, 1, 0) > 0;
}

ucs_status_t finishRequest(ucs_status_ptr_t request) {
  if (request == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  const ucs_status_t s = ucp_request_check_status(request);
  ucp_request_free(request);
  return s;
}

}  // namespace tandem::kv_transport
