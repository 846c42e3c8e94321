// GenerateBackend on an engine in this process (tandem serve before
// disaggregation, and --role both workers).
#pragma once

#include <atomic>
#include <memory>

#include "router/generate/generate_backend.h"
#include "server/engine/engine_loop.h"

namespace tandem::router {

class LocalBackend : public GenerateBackend {
 public:
  explicit LocalBackend(std::unique_ptr<engine::EngineLoop> loop) : loop_(std::move(loop)) {}

  // GenerateBackend
  absl::StatusOr<RequestId> submit(std::vector<int32_t> prompt, engine::SamplingParams params,
                                   OutputCallback callback) override;
  void cancel(RequestId id) override { loop_->cancel(id); }
  bool ready() const override { return true; }
  BackendLoad load() const override;
  int maxModelLen() const override { return loop_->maxModelLen(); }

  // ends every request (kAbort) and stops the engine thread.
  void stop() { loop_->stop(); }

 private:
  std::unique_ptr<engine::EngineLoop> loop_;
  std::atomic<RequestId> next_id_{1};
};

}  // namespace tandem::router
