#include "router/generate/call_metrics.h"

namespace tandem::router {
namespace {

double seconds(CallMetrics::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

CallMetrics::CallMetrics(ServingMetrics* metrics, Clock::time_point arrival, RequestRecordPtr record)
    : metrics_(metrics), arrival_(arrival), record_(std::move(record)) {
  metrics_->requestStarted();
}

void CallMetrics::tokenArrived(ChoiceTiming& choice) {
  const Clock::time_point now = Clock::now();
  if (!first_token_seen_) {
    first_token_seen_ = true;
    metrics_->observeTtft(seconds(now - arrival_));
    if (record_ != nullptr) record_->firstToken();
  } else if (choice.tokens > 0) {
    metrics_->observeInterToken(seconds(now - choice.last_token));
  }
  choice.last_token = now;
  ++choice.tokens;
}

void CallMetrics::completed(const std::vector<PromptTokens>& prompts) {
  metrics_->observeE2e(seconds(Clock::now() - arrival_));
  int prompt = 0, generated = 0;
  for (const PromptTokens& p : prompts) {
    metrics_->countPrompt(p.prompt, p.cached, p.generated);
    prompt += p.prompt;
    generated += p.generated;
  }
  if (record_ != nullptr) record_->setTokens(prompt, generated);
}

void CallMetrics::end(const std::string& endpoint, int status) {
  if (ended_) return;
  ended_ = true;
  metrics_->countRequest(endpoint, status);
  metrics_->requestEnded();
  if (record_ != nullptr) record_->setCallStatus(status);
}

}  // namespace tandem::router
