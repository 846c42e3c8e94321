#include "router/generate/request_record.h"

#include <random>

#include "absl/strings/str_format.h"

namespace tandem::router {

std::string requestIdFor(std::string_view client_id) {
  bool usable = !client_id.empty() && client_id.size() <= 64;
  for (char c : client_id) usable = usable && c > 0x20 && c < 0x7f;
  if (usable) return std::string(client_id);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("req-%016x", rng());
}

RequestRecord::RequestRecord(AccessLogPtr log, std::string protocol, std::string api,
                             std::string peer, std::string request_id)
    : log_(std::move(log)),
      request_id_(std::move(request_id)),
      arrival_(Clock::now()),
      hold_(crash::InFlightIds::global().hold(request_id_)) {
  entry_.time = std::chrono::system_clock::now();
  entry_.protocol = std::move(protocol);
  entry_.api = std::move(api);
  entry_.peer = std::move(peer);
  entry_.request_id = request_id_;
}

RequestRecord::~RequestRecord() { finish(500); }

void RequestRecord::setModel(std::string model) {
  std::lock_guard lock(mu_);
  entry_.model = std::move(model);
}

void RequestRecord::firstToken() {
  std::lock_guard lock(mu_);
  if (!first_token_) first_token_ = Clock::now();
}

void RequestRecord::setTokens(int prompt, int output) {
  std::lock_guard lock(mu_);
  entry_.prompt_tokens = prompt;
  entry_.output_tokens = output;
}

void RequestRecord::setCallStatus(int status) {
  std::lock_guard lock(mu_);
  call_status_ = status;
}

void RequestRecord::finish(int status) {
  AccessEntry entry;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    hold_.release();
    if (log_ == nullptr) return;
    const auto ms = [this](Clock::time_point t) {
      return std::chrono::duration<double, std::milli>(t - arrival_).count();
    };
    entry_.status = call_status_.value_or(status);
    entry_.duration_ms = ms(Clock::now());
    if (first_token_) entry_.ttft_ms = ms(*first_token_);
    entry = entry_;
  }
  log_->write(entry);
}

}  // namespace tandem::router
