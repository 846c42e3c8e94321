#include "server/kv_transport/ucx_context.h"

#include "absl/strings/str_cat.h"

namespace tandem::kv_transport {

absl::Status ucxError(absl::StatusCode code, const char* what, ucs_status_t status) {
  return absl::Status(code, absl::StrCat("UCX: ", what, " failed: ", ucs_status_string(status)));
}

absl::StatusOr<std::shared_ptr<UcxContext>> UcxContext::create() {
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) return ucxError(absl::StatusCode::kUnavailable, "reading UCX_* settings", s);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  // workers are created and destroyed from several threads (one per
  // connection on P).
  params.mt_workers_shared = 1;
  ucp_context_h context = nullptr;
  s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) return ucxError(absl::StatusCode::kUnavailable, "ucp_init", s);
  return std::shared_ptr<UcxContext>(new UcxContext(context));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

}  // namespace tandem::kv_transport
