#include "router/generate/api_key_limits.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"

namespace tandem::router {

// a budget of `per_minute` units refilled continuously; per_minute 0 = none.
struct TokenBucket {
  int64_t per_minute = 0;
  double level = 0;
  ApiKeyLimits::Clock::time_point refilled{};

  void setLimit(int64_t limit, ApiKeyLimits::Clock::time_point now) {
    if (per_minute == 0) {  // a new (or newly limited) budget starts full
      level = static_cast<double>(limit);
      refilled = now;
    }
    per_minute = limit;
    level = std::min(level, static_cast<double>(limit));
  }
  void refill(ApiKeyLimits::Clock::time_point now) {
    if (now <= refilled) return;
    const double seconds = std::chrono::duration<double>(now - refilled).count();
    level = std::min(static_cast<double>(per_minute), level + seconds * per_minute / 60.0);
    refilled = now;
  }
  // whole seconds until the level reaches `target`, at least 1.
  int64_t secondsUntil(double target) const {
    const double seconds = (target - level) * 60.0 / static_cast<double>(per_minute);
    // less a hair: 20.000000000000004 s of float error is 20 s, not 21.
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(seconds - 1e-6)));
  }
};

struct ApiKeyState {
  std::mutex mu;
  TokenBucket requests;  // guarded by mu
  TokenBucket tokens;    // guarded by mu
};

namespace {

std::string sha256(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(key.data(), key.size(), digest, &size, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

}  // namespace

absl::StatusOr<ApiKeyLimitsPtr> ApiKeyLimits::create(const std::vector<std::string>& keys,
                                                     const std::string& file) {
  ApiKeyLimitsPtr limits(new ApiKeyLimits(file));
  limits->fixed_keys_ = keys;
  std::vector<ApiKeyEntry> entries;
  if (!file.empty()) {
    absl::StatusOr<std::vector<ApiKeyEntry>> listed = readApiKeyFile(file);
    if (!listed.ok()) return listed.status();
    entries = *std::move(listed);
  }
  limits->install(entries);
  return limits;
}

absl::Status ApiKeyLimits::reload() {
  if (file_.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<ApiKeyEntry>> listed = readApiKeyFile(file_);
  if (!listed.ok()) return listed.status();
  install(*listed);
  return absl::OkStatus();
}

void ApiKeyLimits::install(const std::vector<ApiKeyEntry>& entries) {
  const Clock::time_point now = Clock::now();
  std::unordered_map<std::string, ApiKeyLimit> wanted;
  for (const std::string& key : fixed_keys_) wanted.emplace(sha256(key), ApiKeyLimit{});
  for (const ApiKeyEntry& entry : entries) wanted[sha256(entry.key)] = entry.limit;
  std::lock_guard lock(mu_);
  std::unordered_map<std::string, ApiKeyCaller> next;
  for (auto& [digest, limit] : wanted) {
    auto it = keys_.find(digest);
    ApiKeyCaller state = it != keys_.end() ? it->second : std::make_shared<ApiKeyState>();
    {
      std::lock_guard state_lock(state->mu);
      state->requests.setLimit(limit.requests_per_minute, now);
      state->tokens.setLimit(limit.tokens_per_minute, now);
    }
    next.emplace(digest, std::move(state));
  }
  keys_ = std::move(next);
}

bool ApiKeyLimits::empty() const {
  std::lock_guard lock(mu_);
  return keys_.empty();
}

size_t ApiKeyLimits::size() const {
  std::lock_guard lock(mu_);
  return keys_.size();
}

ApiKeyCaller ApiKeyLimits::find(std::string_view key) const {
  const std::string digest = sha256(key);
  std::lock_guard lock(mu_);
  auto it = keys_.find(digest);
  return it != keys_.end() ? it->second : nullptr;
}

std::variant<ApiKeyCaller, ApiKeyRefusal> ApiKeyLimits::admitRequest(std::string_view key,
                                                                     Clock::time_point now) {
  ApiKeyCaller caller = find(key);
  if (caller == nullptr) {
    return ApiKeyRefusal{ApiKeyRefusal::Kind::kUnknownKey,
                         "a valid API key is required: Authorization: Bearer <key>", 0};
  }
  std::lock_guard lock(caller->mu);
  TokenBucket& tokens = caller->tokens;
  if (tokens.per_minute > 0) {
    tokens.refill(now);
    if (tokens.level <= 0) {
      const int64_t wait = tokens.secondsUntil(1);
      return ApiKeyRefusal{
          ApiKeyRefusal::Kind::kTokenRate,
          absl::StrFormat("Rate limit reached for tokens per min (TPM): Limit %d, Used %d. "
                          "Please try again in %ds.",
                          tokens.per_minute,
                          tokens.per_minute - static_cast<int64_t>(std::floor(tokens.level)), wait),
          wait};
    }
  }
  TokenBucket& requests = caller->requests;
  if (requests.per_minute > 0) {
    requests.refill(now);
    if (requests.level < 1) {
      const int64_t wait = requests.secondsUntil(1);
      return ApiKeyRefusal{
          ApiKeyRefusal::Kind::kRequestRate,
          absl::StrFormat("Rate limit reached for requests per min (RPM): Limit %d, Used %d, "
                          "Requested 1. Please try again in %ds.",
                          requests.per_minute,
                          requests.per_minute - static_cast<int64_t>(std::floor(requests.level)),
                          wait),
          wait};
    }
    requests.level -= 1;
  }
  return caller;
}

std::optional<ApiKeyRefusal> ApiKeyLimits::checkTokens(const ApiKeyCaller& caller, int64_t tokens) {
  if (caller == nullptr) return std::nullopt;
  std::lock_guard lock(caller->mu);
  const TokenBucket& bucket = caller->tokens;
  if (bucket.per_minute > 0 && tokens > bucket.per_minute) {
    return ApiKeyRefusal{
        ApiKeyRefusal::Kind::kTooManyTokens,
        absl::StrFormat("the request may use %d tokens (its prompt tokens plus max_tokens for each "
                        "sequence); this API key allows %d tokens per minute",
                        tokens, bucket.per_minute),
        0};
  }
  return std::nullopt;
}

void ApiKeyLimits::chargeTokens(const ApiKeyCaller& caller, int64_t tokens, Clock::time_point now) {
  if (caller == nullptr) return;
  std::lock_guard lock(caller->mu);
  TokenBucket& bucket = caller->tokens;
  if (bucket.per_minute == 0) return;
  bucket.refill(now);
  bucket.level -= static_cast<double>(tokens);
}

}  // namespace tandem::router
