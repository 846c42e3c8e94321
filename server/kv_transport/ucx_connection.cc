#include "server/kv_transport/ucx_connection.h"

#include <unistd.h>

#include "common/status.h"
#include "server/kv_transport/endpoint.h"

namespace tandem::kv_transport {

namespace {

// bounds on what the pool keeps.
constexpr size_t kIdlePerReceiver = 4;
constexpr size_t kIdleReceivers = 32;
// no transfer names more blocks than this (D's answer is refused otherwise).
constexpr size_t kMaxBlocks = size_t{1} << 24;

bool isBytes(const ucp_am_recv_param_t* param) {
  return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UcxConnection>> UcxConnection::create(UcxContextPtr context,
                                                                     const ucx::UcxEndpoint& d) {
  std::unique_ptr<UcxConnection> c(new UcxConnection());
  ASSIGN_OR_RETURN(c->worker_, UcxWorker::create(std::move(context)));
  RETURN_IF_ERROR(c->worker_->setHandler(ucx::kOpened, &UcxConnection::onOpened, c.get()));
  RETURN_IF_ERROR(c->worker_->setHandler(ucx::kResult, &UcxConnection::onResult, c.get()));
  // a same-host D is watched through its pidfd (UCX's shared-memory
  // transports detect no peer failure); UCX watches a remote one.
  const bool same_host = d.boot_id == localBootId();
  if (same_host) c->receiver_pidfd_ = openPidfd(d.pid);
  ASSIGN_OR_RETURN(c->ep_, c->worker_->connect(d.worker_address, !same_host,
                                               &UcxConnection::onError, c.get()));
  if (!d.rkey.empty() && ucp_ep_rkey_unpack(c->ep_, d.rkey.data(), &c->rkey_) == UCS_OK) {
    c->base_ = d.base;
    c->bytes_ = d.bytes;
  } else {
    c->rkey_ = nullptr;
  }
  return c;
}

UcxConnection::~UcxConnection() {
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
  if (ep_ != nullptr) worker_->close(ep_, !health().ok());
  if (receiver_pidfd_ >= 0) close(receiver_pidfd_);
}

absl::Status UcxConnection::health() {
  if (broken_.ok() && pidfdExited(receiver_pidfd_)) {
    broken_ = absl::UnavailableError("the KV receiver's process exited");
  }
  return broken_;
}

uint64_t UcxConnection::newStream() {
  opened_.reset();
  result_.reset();
  return ++stream_;
}

ucs_status_t UcxConnection::onOpened(void* arg, const void*, size_t, void* data, size_t length,
                                     const ucp_am_recv_param_t* param) {
  auto* c = static_cast<UcxConnection*>(arg);
  if (!isBytes(param)) return UCS_OK;
  auto m = ucx::decodeOpened(amBytes(data, length), kMaxBlocks);
  if (m && m->stream == c->stream_) c->opened_ = std::move(m);
  return UCS_OK;
}

ucs_status_t UcxConnection::onResult(void* arg, const void*, size_t, void* data, size_t length,
                                     const ucp_am_recv_param_t* param) {
  auto* c = static_cast<UcxConnection*>(arg);
  if (!isBytes(param)) return UCS_OK;
  auto m = ucx::decodeResult(amBytes(data, length));
  // the first verdict counts.
  if (m && m->stream == c->stream_ && !c->result_) c->result_ = std::move(m);
  return UCS_OK;
}

void UcxConnection::onError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxConnection*>(arg)->broken_ =
      ucxError(absl::StatusCode::kUnavailable, "the link to the KV receiver", status);
}

absl::StatusOr<std::unique_ptr<UcxConnection>> UcxConnectionPool::take(const std::string& key,
                                                                       const ucx::UcxEndpoint& d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    if (it != idle_.end() && !it->second.empty()) {
      std::unique_ptr<UcxConnection> c = std::move(it->second.back());
      it->second.pop_back();
      if (it->second.empty()) idle_.erase(it);
      return c;
    }
  }
  return UcxConnection::create(context_, d);
}

void UcxConnectionPool::give(const std::string& key, std::unique_ptr<UcxConnection> connection) {
  std::unique_ptr<UcxConnection> dropped;  // closed outside the lock
  std::vector<std::unique_ptr<UcxConnection>> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.contains(key) && idle_.size() >= kIdleReceivers) {
      // a receiver not used lately (e.g. one that restarted): forget one.
      evicted = std::move(idle_.begin()->second);
      idle_.erase(idle_.begin());
    }
    auto& list = idle_[key];
    if (list.size() < kIdlePerReceiver) {
      list.push_back(std::move(connection));
    } else {
      dropped = std::move(connection);
    }
  }
}

}  // namespace tandem::kv_transport
