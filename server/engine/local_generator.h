// generation::Generator on an engine in this process (tandem serve before
// disaggregation, and --role both workers).
#pragma once

#include <atomic>
#include <memory>

#include "generation/generator.h"
#include "server/engine/engine_loop.h"

namespace tandem::engine {

class LocalGenerator : public generation::Generator {
 public:
  explicit LocalGenerator(std::unique_ptr<EngineLoop> loop) : loop_(std::move(loop)) {}

  // generation::Generator
  absl::StatusOr<generation::RequestId> submit(std::vector<int32_t> prompt, generation::SamplingParams params,
                                   OutputCallback callback) override;
  void cancel(generation::RequestId id) override { loop_->cancel(id); }
  bool ready() const override { return true; }
  generation::GeneratorLoad load() const override;
  generation::RequestLimits limits() const override { return loop_->limits(); }

  // ends every request (kAbort) and stops the engine thread.
  void stop() { loop_->stop(); }

 private:
  std::unique_ptr<EngineLoop> loop_;
  std::atomic<generation::RequestId> next_id_{1};
};

}  // namespace tandem::engine
