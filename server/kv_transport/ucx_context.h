// One UCP context (ucp_context_h): the transports UCX found (UCX_TLS and the
// other UCX_* variables choose among shared memory, TCP, RDMA), with the
// features the KV transport uses: RMA (ucp_put_nbx into D's registered
// storage), active messages (control and, without RMA, block data) and
// wake-up (an event fd, so an idle end sleeps instead of polling).
// Shared by every worker of one transport end.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>

#include "absl/status/statusor.h"

namespace tandem::kv_transport {

class UcxContext {
 public:
  // Unavailable when UCX cannot start (no usable transport, bad UCX_*
  // settings), with UCX's reason.
  static absl::StatusOr<std::shared_ptr<UcxContext>> create();
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h get() const { return context_; }

 private:
  explicit UcxContext(ucp_context_h context) : context_(context) {}
  ucp_context_h context_;
};
using UcxContextPtr = std::shared_ptr<UcxContext>;

// "UCX: <what> failed: <UCX's status string>" as `code`.
absl::Status ucxError(absl::StatusCode code, const char* what, ucs_status_t status);

}  // namespace tandem::kv_transport
