// Helpers shared by the EngineLoop tests: a callback that collects one
// request's outputs, greedy params, loops over stories260K, and longer
// oracle cases (prompt plus the first oracle tokens) that span several KV
// blocks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/engine_loop.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::engine::testing_support {

// stories260K's KV bytes a token: 5 layers * 2 (K, V) * 4 kv heads * 8 dims
// * 4 bytes.
constexpr size_t kStoriesKvBytesPerToken = 5 * 2 * 4 * 8 * 4;

inline generation::SamplingParams greedy(int max_tokens) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;  // the oracle runs past EOS
  return p;
}

// collects one request's outputs and signals its end.
struct Collector {
  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<generation::TokenOutput> outputs;
  std::vector<int32_t> tokens;
  generation::FinishReason finish = generation::FinishReason::kNone;
  int calls_after_finish = 0;

  EngineLoop::OutputCallback callback() {
    return [this](const generation::TokenOutput& out) {
      std::lock_guard lock(mu);
      if (finish != generation::FinishReason::kNone) ++calls_after_finish;
      outputs.push_back(out);
      if (out.token >= 0) tokens.push_back(out.token);
      if (out.finished()) {
        finish = out.finish_reason;
        done_cv.notify_all();
      }
    };
  }
  bool wait(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mu);
    return done_cv.wait_for(lock, timeout, [&] { return finish != generation::FinishReason::kNone; });
  }
  size_t numOutputs() {
    std::lock_guard lock(mu);
    return outputs.size();
  }
  size_t numTokens() {
    std::lock_guard lock(mu);
    return tokens.size();
  }
  generation::TokenOutput first() {
    std::lock_guard lock(mu);
    return outputs.empty() ? generation::TokenOutput{} : outputs.front();
  }
};

// a prompt and its greedy continuation.
struct Case {
  std::vector<int32_t> prompt;
  std::vector<int32_t> expected;
};

// every oracle case with its first `extra` completion tokens moved into the
// prompt: greedy decoding is deterministic, so the rest of the completion is
// still the expected continuation, and the prompts grow past a few blocks.
inline std::vector<Case> oracleCases(int extra) {
  std::vector<Case> out;
  for (const auto& c : testing::storiesOracle()) {
    Case k;
    k.prompt = c.prompt_ids;
    k.prompt.insert(k.prompt.end(), c.completion_ids.begin(), c.completion_ids.begin() + extra);
    k.expected.assign(c.completion_ids.begin() + extra, c.completion_ids.end());
    out.push_back(std::move(k));
  }
  return out;
}

inline EngineAssemblyOptions smallOptions(int block_size, int chunk_size) {
  EngineAssemblyOptions options;
  options.num_threads = 1;
  options.block_size = block_size;
  options.chunk_size = chunk_size;
  options.max_num_seqs = 16;
  return options;
}

inline std::unique_ptr<EngineLoop> makeLoop(const EngineAssemblyOptions& options) {
  auto local = EngineAssembly::create(testing::storiesGguf(), options);
  EXPECT_TRUE(local.ok()) << local.status();
  if (!local.ok()) return nullptr;
  return std::make_unique<EngineLoop>(std::move(*local));
}

// the decode worker's side of a remote prefill: submits `prompt` under
// `id` with the loop's RemotePrefillConnector and waits until the engine
// admitted it: the blocks to fill, or ResourceExhausted when the loop
// declined (the request then prefills itself). Not from the loop's thread.
inline absl::StatusOr<RemotePrefillConnector::Allocation> awaitKv(
    EngineLoop& loop, generation::SeqId id, std::vector<int32_t> prompt,
    const generation::SamplingParams& params, EngineLoop::OutputCallback callback) {
  auto allocated =
      std::make_shared<std::promise<std::optional<RemotePrefillConnector::Allocation>>>();
  std::future<std::optional<RemotePrefillConnector::Allocation>> done = allocated->get_future();
  loop.remotePrefill().expect(
      id, [allocated](std::optional<RemotePrefillConnector::Allocation> a) {
        allocated->set_value(std::move(a));
      });
  absl::Status submitted =
      loop.submit(id, std::move(prompt), params, std::move(callback), &loop.remotePrefill());
  if (!submitted.ok()) return submitted;
  if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    return absl::DeadlineExceededError("not admitted in 30 s");
  }
  std::optional<RemotePrefillConnector::Allocation> allocation = done.get();
  if (!allocation) return absl::ResourceExhaustedError("declined: prefills locally");
  return std::move(*allocation);
}

// the prefill worker's side: submits a prefill of `prompt` under `id` with
// the loop's HeldPrefillConnector (max_tokens 1); its blocks stay held
// after `on_done` until loop.heldPrefills().release(id).
inline absl::Status submitPrefill(EngineLoop& loop, generation::SeqId id, std::vector<int32_t> prompt,
                                  generation::SamplingParams params,
                                  HeldPrefillConnector::ProgressFn on_progress,
                                  EngineLoop::OutputCallback on_done) {
  loop.heldPrefills().watch(id, std::move(on_progress));
  params.max_tokens = 1;
  return loop.submit(id, std::move(prompt), std::move(params), std::move(on_done),
                     &loop.heldPrefills());
}

// polls `pred` for up to 10 s (stats are published after each step).
template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 10000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

}  // namespace tandem::engine::testing_support
