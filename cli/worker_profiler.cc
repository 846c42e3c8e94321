#include "cli/worker_profiler.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/str_format.h"

namespace tandem::cli {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Probe {
 public:
  Probe(engine::EngineAssembly& assembly, uint64_t seed)
      : engine_(assembly.engine()),
        limits_(assembly.limits()),
        vocab_(assembly.weights().config().vocab_size),
        rng_(seed) {}

  std::vector<int32_t> prompt(int length) {
    // skip the first ids (special tokens in most vocabularies).
    std::uniform_int_distribution<int32_t> id(std::min(3, vocab_ - 1), vocab_ - 1);
    std::vector<int32_t> p(length);
    for (int32_t& t : p) t = id(rng_);
    return p;
  }

  // a request the engine takes (it asserts the limits: checked here first).
  absl::Status add(generation::SeqId id, std::vector<int32_t> prompt,
                   const generation::SamplingParams& params) {
    if (absl::Status s = generation::checkRequest(limits_, prompt, params); !s.ok()) return s;
    return engine_.addRequest(id, std::move(prompt), params);
  }

  // seconds to prefill one prompt of `length` alone (to its first token).
  absl::StatusOr<double> prefillSeconds(int length) {
    generation::SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 1;
    params.ignore_eos = true;
    const auto start = Clock::now();
    if (absl::Status s = add(next_id_++, prompt(length), params); !s.ok()) return s;
    while (engine_.hasUnfinished()) engine_.step();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // seconds a decode step takes with `batch` sequences of `context` tokens.
  absl::StatusOr<double> decodeStepSeconds(int batch, int context, int steps) {
    generation::SamplingParams params;
    params.temperature = 0;
    params.max_tokens = steps + 2;
    params.ignore_eos = true;
    std::vector<generation::SeqId> ids;
    for (int i = 0; i < batch; ++i) {
      ids.push_back(next_id_++);
      if (absl::Status s = add(ids.back(), prompt(context), params); !s.ok()) return s;
    }
    // prefill them all: every one has its first token.
    int started = 0;
    while (started < batch && engine_.hasUnfinished()) {
      for (const generation::TokenOutput& o : engine_.step()) started += o.num_output_tokens == 1;
    }
    const auto start = Clock::now();
    int timed = 0;
    for (; timed < steps && engine_.hasUnfinished(); ++timed) engine_.step();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (generation::SeqId id : ids) (void)engine_.abort(id);
    while (engine_.hasUnfinished()) engine_.step();
    if (started < batch || timed < steps) {
      return absl::InternalError(absl::StrFormat("batch %d at context %d did not run %d decode steps", batch,
                                                 context, steps));
    }
    return seconds / steps;
  }

 private:
  engine::Engine& engine_;
  const generation::RequestLimits limits_;
  const int vocab_;
  std::mt19937_64 rng_;
  generation::SeqId next_id_ = 1;
};

}  // namespace

absl::StatusOr<planner::WorkerProfile> measureWorkerProfile(engine::EngineAssembly& assembly,
                                                            const ProfileSweep& sweep_in,
                                                            const std::function<void(const std::string&)>& progress) {
  ProfileSweep sweep = sweep_in;
  const int max_len = assembly.maxModelLen();
  if (sweep.prompt_lengths.empty()) {
    for (int n = 16; n <= max_len / 2; n *= 2) sweep.prompt_lengths.push_back(n);
    if (max_len * 7 / 8 > sweep.prompt_lengths.back()) sweep.prompt_lengths.push_back(max_len * 7 / 8);
  }
  if (sweep.contexts.empty()) sweep.contexts = {std::max(1, max_len / 16), max_len / 4, max_len / 2};
  if (sweep.repeats < 1 || sweep.decode_steps < 1) {
    return absl::InvalidArgumentError("repeats and decode steps must be at least 1");
  }
  for (int n : sweep.prompt_lengths) {
    if (n < 1 || n >= max_len) return absl::InvalidArgumentError(absl::StrFormat("prompt length %d does not fit the context %d", n, max_len));
  }
  for (int c : sweep.contexts) {
    if (c < 1 || c + sweep.decode_steps + 2 > max_len) {
      return absl::InvalidArgumentError(absl::StrFormat("context %d does not fit the context %d", c, max_len));
    }
  }
  Probe probe(assembly, sweep.seed);
  // a warm-up: the first step pays for page faults and thread start.
  if (absl::StatusOr<double> w = probe.prefillSeconds(sweep.prompt_lengths.front()); !w.ok()) return w.status();

  std::vector<planner::PrefillPoint> prefill;
  for (int n : sweep.prompt_lengths) {
    std::vector<double> runs;
    for (int r = 0; r < sweep.repeats; ++r) {
      absl::StatusOr<double> s = probe.prefillSeconds(n);
      if (!s.ok()) return s.status();
      runs.push_back(*s);
    }
    const double rate = n / median(runs);
    prefill.push_back({static_cast<double>(n), rate});
    progress(absl::StrFormat("prefill %6d tokens: %10.0f tokens/s", n, rate));
  }
  std::vector<planner::DecodePoint> decode;
  for (int b : sweep.batches) {
    for (int c : sweep.contexts) {
      std::vector<double> runs;
      for (int r = 0; r < sweep.repeats; ++r) {
        absl::StatusOr<double> s = probe.decodeStepSeconds(b, c, sweep.decode_steps);
        if (!s.ok()) return s.status();
        runs.push_back(*s);
      }
      const double itl_ms = median(runs) * 1000;
      decode.push_back({static_cast<double>(b), static_cast<double>(c), itl_ms});
      progress(absl::StrFormat("decode batch %3d context %6d: %8.3f ms a step", b, c, itl_ms));
    }
  }
  const int max_batch = *std::max_element(sweep.batches.begin(), sweep.batches.end());
  return planner::WorkerProfile::create(std::move(prefill), std::move(decode),
                                        static_cast<double>(assembly.numBlocks()) *
                                            assembly.runner().kvLayout().block_size,
                                        max_batch);
}

}  // namespace tandem::cli
