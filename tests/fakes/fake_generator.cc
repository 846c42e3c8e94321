#include "tests/fakes/fake_generator.h"

#include <utility>

namespace tandem::testing {

using generation::FinishReason;
using generation::RequestId;
using generation::TokenOutput;

FakeGenerator::FakeGenerator() : thread_([this] { run(); }) {}

FakeGenerator::~FakeGenerator() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void FakeGenerator::setDefaultScript(FakeScript script) {
  std::lock_guard lock(mu_);
  default_script_ = std::move(script);
}

void FakeGenerator::pushScript(FakeScript script) {
  std::lock_guard lock(mu_);
  scripts_.push_back(std::move(script));
}

void FakeGenerator::setReady(bool ready) {
  std::lock_guard lock(mu_);
  ready_ = ready;
}

void FakeGenerator::setMaxModelLen(int len) {
  std::lock_guard lock(mu_);
  limits_.max_model_len = len;
}

void FakeGenerator::setLimits(generation::RequestLimits limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

void FakeGenerator::finish(RequestId id, FinishReason reason) {
  std::lock_guard lock(mu_);
  auto it = active_.find(id);
  if (it == active_.end()) return;
  TokenOutput out;
  out.token = -1;
  out.finish_reason = reason;
  out.num_cached_tokens = it->second.cached_tokens;
  queueLocked(id, std::move(out));
}

std::vector<FakeGenerator::Submit> FakeGenerator::submits() const {
  std::lock_guard lock(mu_);
  return submits_;
}

std::vector<RequestId> FakeGenerator::cancels() const {
  std::lock_guard lock(mu_);
  return cancels_;
}

bool FakeGenerator::waitFor(
    const std::function<bool(const std::vector<Submit>&, const std::vector<RequestId>&)>& condition,
    std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return condition(submits_, cancels_); });
}

int64_t FakeGenerator::deliveredCount() const {
  std::lock_guard lock(mu_);
  return delivered_;
}

int FakeGenerator::finishedCount() const {
  std::lock_guard lock(mu_);
  return finished_;
}

absl::StatusOr<RequestId> FakeGenerator::submit(std::vector<int32_t> prompt,
                                                generation::SamplingParams params,
                                                OutputCallback callback) {
  std::lock_guard lock(mu_);
  FakeScript script = default_script_;
  if (!scripts_.empty()) {
    script = std::move(scripts_.front());
    scripts_.pop_front();
  }
  if (absl::Status limit = generation::checkRequest(limits_, prompt, params); !limit.ok()) {
    script.refuse = std::move(limit);
  }
  if (!script.refuse.ok()) {
    submits_.push_back({0, std::move(prompt), std::move(params)});
    changed_.notify_all();
    return script.refuse;
  }
  const RequestId id = next_id_++;
  const int top = params.logprobs.value_or(0);
  const int num_prompt = static_cast<int>(prompt.size());
  std::vector<generation::PromptTokenLogprob> scores;
  if (params.prompt_logprobs) {
    // prompt token i: logprob -i/8, rank i, its top: the token itself, then token + 1, ...
    for (int i = 1; i < num_prompt; ++i) {
      generation::PromptTokenLogprob s{prompt[i], -0.125f * i, i, {}};
      for (int k = 0; k < *params.prompt_logprobs; ++k) s.top_logprobs.push_back({prompt[i] + k, -0.125f * (i + k)});
      scores.push_back(std::move(s));
    }
  }
  submits_.push_back({id, std::move(prompt), std::move(params)});
  active_[id] = Active{script.cached_tokens};
  callbacks_[id] = std::move(callback);
  if (script.endless && !script.tokens.empty()) {
    Active& active = active_[id];
    active.endless_tokens = script.tokens;
    active.num_prompt = num_prompt;
    active.logprob = script.logprob;
    queueEndlessLocked(id);
    changed_.notify_all();
    return id;
  }
  for (size_t i = 0; i < script.tokens.size(); ++i) {
    TokenOutput out;
    out.id = id;
    out.token = script.tokens[i];
    out.logprob = script.logprob;
    for (int k = 0; k < top; ++k) out.top_logprobs.push_back({out.token + k, script.logprob - k});
    out.num_prompt_tokens = num_prompt;
    out.num_output_tokens = static_cast<int>(i + 1);
    out.num_cached_tokens = script.cached_tokens;
    if (i == 0) out.prompt_logprobs = scores;
    const bool last = i + 1 == script.tokens.size();
    if (last && !script.fail && !script.hold) out.finish_reason = script.finish;
    queueLocked(id, std::move(out));
  }
  if (script.fail || (script.tokens.empty() && !script.hold)) {
    TokenOutput out;
    out.id = id;
    out.token = -1;
    out.finish_reason = script.fail ? FinishReason::kError : script.finish;
    out.num_cached_tokens = script.cached_tokens;
    queueLocked(id, std::move(out));
  }
  changed_.notify_all();
  return id;
}

void FakeGenerator::cancel(RequestId id) {
  std::lock_guard lock(mu_);
  cancels_.push_back(id);
  if (active_.count(id) != 0) {
    TokenOutput out;
    out.id = id;
    out.token = -1;
    out.finish_reason = FinishReason::kAbort;
    queueLocked(id, std::move(out));
  }
  changed_.notify_all();
}

bool FakeGenerator::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

generation::GeneratorLoad FakeGenerator::load() const {
  std::lock_guard lock(mu_);
  generation::GeneratorLoad load;
  load.num_running = static_cast<int>(active_.size());
  return load;
}

generation::RequestLimits FakeGenerator::limits() const {
  std::lock_guard lock(mu_);
  return limits_;
}

void FakeGenerator::queueLocked(RequestId id, TokenOutput output) {
  output.id = id;
  if (output.finished()) active_.erase(id);
  outputs_.push_back({id, std::move(output)});
  changed_.notify_all();
}

void FakeGenerator::queueEndlessLocked(RequestId id) {
  Active& active = active_[id];
  TokenOutput out;
  out.token = active.endless_tokens[active.next % active.endless_tokens.size()];
  out.logprob = active.logprob;
  out.num_prompt_tokens = active.num_prompt;
  out.num_output_tokens = static_cast<int>(++active.next);
  out.num_cached_tokens = active.cached_tokens;
  queueLocked(id, std::move(out));
}

void FakeGenerator::run() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stop_ || !outputs_.empty(); });
    if (outputs_.empty()) return;  // stopping, everything delivered
    Pending next = std::move(outputs_.front());
    outputs_.pop_front();
    OutputCallback callback = callbacks_[next.id];
    const bool last = next.output.finished();
    if (last) callbacks_.erase(next.id);
    lock.unlock();
    if (callback) callback(next.output);
    lock.lock();
    ++delivered_;
    if (last) ++finished_;
    // an endless request makes its next output once this one is taken.
    auto active = active_.find(next.id);
    if (!last && active != active_.end() && !active->second.endless_tokens.empty()) {
      queueEndlessLocked(next.id);
    }
    changed_.notify_all();
  }
}

}  // namespace tandem::testing
