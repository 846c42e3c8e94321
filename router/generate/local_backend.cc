#include "router/generate/local_backend.h"

#include "absl/status/status.h"

namespace tandem::router {

absl::StatusOr<RequestId> LocalBackend::submit(std::vector<int32_t> prompt,
                                               engine::SamplingParams params,
                                               OutputCallback callback) {
  const RequestId id = next_id_.fetch_add(1);
  absl::Status status = loop_->submit(id, std::move(prompt), std::move(params), std::move(callback));
  if (absl::IsFailedPrecondition(status)) return absl::UnavailableError(status.message());
  if (!status.ok()) return status;
  return id;
}

BackendLoad LocalBackend::load() const {
  const engine::EngineLoopStats s = loop_->stats();
  return {s.num_running, s.num_waiting, s.num_blocks, s.num_free_blocks};
}

}  // namespace tandem::router
