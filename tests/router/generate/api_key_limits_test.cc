// API keys from a key file with per-key limits: the file format (every
// refusal names its line), the token buckets with an injected clock
// (requests and tokens per minute, Retry-After), and reloads (keys added
// and removed, buckets kept, a bad file keeping the keys in use).
#include "router/generate/api_key_limits.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tandem::router {
namespace {

using Clock = ApiKeyLimits::Clock;
using Kind = ApiKeyRefusal::Kind;

TEST(ApiKeyFileTest, ParsesKeysLimitsAndComments) {
  absl::StatusOr<std::vector<ApiKeyEntry>> keys = parseApiKeys(
      "# a comment\n"
      "\n"
      "sk-limited-0001 rpm=60 tpm=100000\n"
      "  sk-tokens-0002\ttpm=5   # only tokens\n"
      "sk-open-000003\r\n",
      "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 3u);
  EXPECT_EQ((*keys)[0].key, "sk-limited-0001");
  EXPECT_EQ((*keys)[0].limit.requests_per_minute, 60);
  EXPECT_EQ((*keys)[0].limit.tokens_per_minute, 100000);
  EXPECT_EQ((*keys)[1].key, "sk-tokens-0002");
  EXPECT_EQ((*keys)[1].limit.requests_per_minute, 0);
  EXPECT_EQ((*keys)[1].limit.tokens_per_minute, 5);
  EXPECT_EQ((*keys)[2].key, "sk-open-000003");
}

TEST(ApiKeyFileTest, RefusesMalformedLinesNamingThem) {
  auto message = [](std::string_view text) {
    return std::string(parseApiKeys(text, "keys.txt").status().message());
  };
  EXPECT_NE(message("sk-good-0001\nsk-bad-00002 rpm=0\n").find("line 2"), std::string::npos);
  EXPECT_NE(message("sk-good-0001 rpm=ten\n").find("rpm=N"), std::string::npos);
  EXPECT_NE(message("sk-good-0001 rps=1\n").find("field 2: unknown limit"), std::string::npos);
  // a second key pasted on a line is not echoed into the error.
  EXPECT_EQ(message("sk-good-0001 sk-secret-0002\n").find("sk-secret"), std::string::npos);
  EXPECT_NE(message("short\n").find("8 to 512"), std::string::npos);
  EXPECT_NE(message("sk-good-0001\nsk-good-0001\n").find("listed before"), std::string::npos);
  EXPECT_NE(message("# nothing\n\n").find("holds no key"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(readApiKeyFile("/nonexistent/keys.txt").status()));
}

TEST(ApiKeyLimitsTest, UnknownKeysAreRefusedAndUnlimitedKeysAlwaysPass) {
  ApiKeyLimitsPtr keys = *ApiKeyLimits::create({"sk-open-0001"});
  EXPECT_EQ(std::get<ApiKeyRefusal>(keys->admitRequest("sk-open-0002")).kind, Kind::kUnknownKey);
  EXPECT_EQ(std::get<ApiKeyRefusal>(keys->admitRequest("")).kind, Kind::kUnknownKey);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(std::holds_alternative<ApiKeyCaller>(keys->admitRequest("sk-open-0001")));
  }
  EXPECT_TRUE(ApiKeyLimits::create({})->get()->empty());
}

class ApiKeyLimitsFileTest : public ::testing::Test {
 protected:
  ApiKeyLimitsFileTest() {
    path_ = (std::filesystem::temp_directory_path() /
             ("tandem-keys-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
  }
  ~ApiKeyLimitsFileTest() override { std::filesystem::remove(path_); }
  void write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }

  std::string path_;
  // after the keys were made (their buckets start full then).
  Clock::time_point t0_;
};

TEST_F(ApiKeyLimitsFileTest, RequestsPerMinuteRefillOverTheMinute) {
  write("sk-limited-0001 rpm=2\n");
  ApiKeyLimitsPtr keys = *ApiKeyLimits::create({}, path_);
  t0_ = Clock::now();
  EXPECT_TRUE(std::holds_alternative<ApiKeyCaller>(keys->admitRequest("sk-limited-0001", t0_)));
  EXPECT_TRUE(std::holds_alternative<ApiKeyCaller>(keys->admitRequest("sk-limited-0001", t0_)));
  auto refused = keys->admitRequest("sk-limited-0001", t0_);
  ASSERT_TRUE(std::holds_alternative<ApiKeyRefusal>(refused));
  EXPECT_EQ(std::get<ApiKeyRefusal>(refused).kind, Kind::kRequestRate);
  EXPECT_EQ(std::get<ApiKeyRefusal>(refused).retry_after_s, 30);  // one request refills in 30 s
  EXPECT_NE(std::get<ApiKeyRefusal>(refused).message.find("requests per min (RPM): Limit 2"),
            std::string::npos);
  // 10 s later: 20 s to wait; 30 s later: one more request.
  EXPECT_EQ(std::get<ApiKeyRefusal>(keys->admitRequest("sk-limited-0001", t0_ + std::chrono::seconds(10)))
                .retry_after_s,
            20);
  EXPECT_TRUE(std::holds_alternative<ApiKeyCaller>(
      keys->admitRequest("sk-limited-0001", t0_ + std::chrono::seconds(30))));
}

TEST_F(ApiKeyLimitsFileTest, TokensPerMinuteRefuseTheNextRequestOnceSpent) {
  write("sk-tokens-0001 tpm=600\n");
  ApiKeyLimitsPtr keys = *ApiKeyLimits::create({}, path_);
  t0_ = Clock::now();
  ApiKeyCaller caller = std::get<ApiKeyCaller>(keys->admitRequest("sk-tokens-0001", t0_));
  EXPECT_EQ(ApiKeyLimits::checkTokens(caller, 601)->kind, Kind::kTooManyTokens);
  EXPECT_FALSE(ApiKeyLimits::checkTokens(caller, 600).has_value());
  ApiKeyLimits::chargeTokens(caller, 500, t0_);
  // 100 left: the next request is admitted, and may overdraw.
  caller = std::get<ApiKeyCaller>(keys->admitRequest("sk-tokens-0001", t0_));
  ApiKeyLimits::chargeTokens(caller, 300, t0_);
  auto refused = keys->admitRequest("sk-tokens-0001", t0_);
  ASSERT_TRUE(std::holds_alternative<ApiKeyRefusal>(refused));
  EXPECT_EQ(std::get<ApiKeyRefusal>(refused).kind, Kind::kTokenRate);
  // 200 tokens overdrawn at 10 tokens/s: above zero after 21 s.
  EXPECT_EQ(std::get<ApiKeyRefusal>(refused).retry_after_s, 21);
  EXPECT_TRUE(std::holds_alternative<ApiKeyCaller>(
      keys->admitRequest("sk-tokens-0001", t0_ + std::chrono::seconds(21))));
}

TEST_F(ApiKeyLimitsFileTest, ReloadChangesKeysKeepsBucketsAndSurvivesABadFile) {
  write("sk-first-00001 rpm=1\n");
  ApiKeyLimitsPtr keys = *ApiKeyLimits::create({"sk-flag-000001"}, path_);
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_TRUE(std::holds_alternative<ApiKeyCaller>(keys->admitRequest("sk-first-00001")));
  write("sk-first-00001 rpm=1\nsk-second-0001\n");
  ASSERT_TRUE(keys->reload().ok());
  EXPECT_EQ(keys->size(), 3u);
  EXPECT_NE(keys->find("sk-second-0001"), nullptr);
  EXPECT_NE(keys->find("sk-flag-000001"), nullptr);  // the flag's keys stay
  // the reload did not refill the first key's bucket.
  EXPECT_EQ(std::get<ApiKeyRefusal>(keys->admitRequest("sk-first-00001")).kind, Kind::kRequestRate);

  write("sk-second-0001 rpm=\n");
  EXPECT_FALSE(keys->reload().ok());
  EXPECT_NE(keys->find("sk-first-00001"), nullptr);  // kept

  write("sk-second-0001\n");
  ASSERT_TRUE(keys->reload().ok());
  EXPECT_EQ(keys->find("sk-first-00001"), nullptr);  // removed
  EXPECT_NE(keys->find("sk-second-0001"), nullptr);
}

}  // namespace
}  // namespace tandem::router
