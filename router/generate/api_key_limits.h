// The API keys a server accepts and each key's rate limits (requests and
// tokens per minute, as token buckets). Admission asks it who a caller is
// and whether the caller may go on; the keys come from --api-key and
// $TANDEM_API_KEYS (no limits) and from --api-key-file (api_key_file.h),
// which reload() re-reads (SIGHUP).
//
// Keys are never compared byte by byte: each is known by its SHA-256, and
// a presented key is hashed and looked up, so the time taken does not
// depend on how much of a valid key it matches.
//
// Each limited key has two buckets, each holding up to one minute's
// allowance and refilling continuously (limit / 60 per second):
//  - requests: admitRequest() takes one, or refuses while less than one is
//    left (retry after the time one takes to refill);
//  - tokens: chargeTokens() takes a request's tokens once it is admitted
//    (the bucket may go below zero), and admitRequest() refuses the key's
//    next requests until it is above zero again.
// A reload keeps the buckets of keys still listed (limits updated, level
// capped at the new allowance), so it cannot be used to reset a key.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "router/generate/api_key_file.h"

namespace tandem::router {

// one key's limits and buckets; what a caller is known by.
struct ApiKeyState;
using ApiKeyCaller = std::shared_ptr<ApiKeyState>;

struct ApiKeyRefusal {
  enum class Kind {
    kUnknownKey,     // no such key
    kRequestRate,    // over the key's requests per minute
    kTokenRate,      // over the key's tokens per minute
    kTooManyTokens,  // one request alone needs more than a minute's tokens
  };
  Kind kind = Kind::kUnknownKey;
  std::string message;
  int64_t retry_after_s = 0;  // when to try again (rate limits), ≥ 1
};

class ApiKeyLimits;
using ApiKeyLimitsPtr = std::shared_ptr<ApiKeyLimits>;

class ApiKeyLimits {
 public:
  using Clock = std::chrono::steady_clock;

  // `keys` without limits (--api-key, $TANDEM_API_KEYS) plus, when `file`
  // is not "", the keys it lists (readApiKeyFile's errors); a key in both
  // takes the file's limits.
  static absl::StatusOr<ApiKeyLimitsPtr> create(const std::vector<std::string>& keys,
                                                const std::string& file = "");

  // re-reads the file (when there is one). On error (readApiKeyFile's) the
  // keys in use stay as they were.
  absl::Status reload();

  // no key at all: anyone may call.
  bool empty() const;
  size_t size() const;

  // the caller presenting `key`, after taking one request from its
  // budget; a refusal when the key is unknown (kUnknownKey) or over its
  // request or token rate. `now` is injectable for tests.
  std::variant<ApiKeyCaller, ApiKeyRefusal> admitRequest(std::string_view key,
                                                        Clock::time_point now = Clock::now());
  // the caller presenting `key`, charging nothing; null when unknown.
  ApiKeyCaller find(std::string_view key) const;
  // kTooManyTokens when a request of `tokens` exceeds `caller`'s whole
  // per-minute allowance (it could never be admitted); nullopt otherwise
  // and for a null caller.
  static std::optional<ApiKeyRefusal> checkTokens(const ApiKeyCaller& caller, int64_t tokens);
  // charges an admitted request's `tokens` to `caller` (null: nothing to
  // charge).
  static void chargeTokens(const ApiKeyCaller& caller, int64_t tokens,
                           Clock::time_point now = Clock::now());

 private:
  explicit ApiKeyLimits(std::string file) : file_(std::move(file)) {}
  void install(const std::vector<ApiKeyEntry>& entries);

  const std::string file_;
  std::vector<std::string> fixed_keys_;
  mutable std::mutex mu_;
  // SHA-256 of the key → its state; guarded by mu_.
  std::unordered_map<std::string, ApiKeyCaller> keys_;
};

}  // namespace tandem::router
