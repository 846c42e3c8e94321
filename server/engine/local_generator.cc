#include "server/engine/local_generator.h"

#include "absl/status/status.h"

namespace tandem::engine {

absl::StatusOr<generation::RequestId> LocalGenerator::submit(std::vector<int32_t> prompt,
                                               generation::SamplingParams params,
                                               OutputCallback callback) {
  if (absl::Status s = generation::checkRequest(loop_->limits(), prompt, params); !s.ok()) return s;
  const generation::RequestId id = next_id_.fetch_add(1);
  absl::Status status = loop_->submit(id, std::move(prompt), std::move(params), std::move(callback));
  if (absl::IsFailedPrecondition(status)) return absl::UnavailableError(status.message());
  if (!status.ok()) return status;
  return id;
}

generation::GeneratorLoad LocalGenerator::load() const {
  const EngineLoopStats s = loop_->stats();
  return {s.num_running, s.num_waiting, s.num_blocks, s.num_free_blocks};
}

}  // namespace tandem::engine
