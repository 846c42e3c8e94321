#include "server/kv_transport/ucx_context.h"

#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace tandem::kv_transport {

absl::Status ucxError(absl::StatusCode code, const char* what, ucs_status_t status) {
  return absl::Status(code, absl::StrCat("UCX: ", what, " failed: ", ucs_status_string(status)));
}

absl::StatusOr<std::shared_ptr<UcxContext>> UcxContext::create() {
  // UCX's TCP transport moves data in 8/64 KiB segments by default; 2 MiB
  // ones took UCX over loopback TCP from ~20% to ~55% of a raw socket's
  // throughput (bench/RESULTS.md). UCX reads transport settings only from
  // the environment (ucp_config_modify does not reach them in 1.13), so
  // they go there, once, before UCX first reads it; a value already set wins.
  static std::once_flag tcp_defaults;
  std::call_once(tcp_defaults, [] {
    setenv("UCX_TCP_TX_SEG_SIZE", "2m", 0);
    setenv("UCX_TCP_RX_SEG_SIZE", "2m", 0);
  });
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
