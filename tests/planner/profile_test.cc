// Worker profiles: validation, interpolation, the JSON round trip and the
// shipped profiles.
#include "planner/profile.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem::planner {
namespace {

WorkerProfile grid() {
  // ITL = 10 + batch x context / 1000 on a 2 x 2 grid.
  absl::StatusOr<WorkerProfile> p = WorkerProfile::create(
      {{100, 1000}, {1000, 2000}, {10000, 1500}},
      {{1, 1000, 11}, {1, 3000, 13}, {9, 1000, 19}, {9, 3000, 37}}, 100000, 64);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(WorkerProfileTest, InterpolatesPrefillInLogLengthAndClampsOutside) {
  WorkerProfile p = grid();
  EXPECT_DOUBLE_EQ(p.prefillTokensPerS(10), 1000);
  EXPECT_DOUBLE_EQ(p.prefillTokensPerS(1000), 2000);
  EXPECT_DOUBLE_EQ(p.prefillTokensPerS(1e6), 1500);
  // sqrt(100 x 1000) is half-way in log length.
  EXPECT_NEAR(p.prefillTokensPerS(std::sqrt(1e5)), 1500, 1e-9);
  EXPECT_DOUBLE_EQ(p.prefillSeconds(500, 1000), 0.25);
}

TEST(WorkerProfileTest, DecodeIsBilinearOnTheGridAndExtrapolatesUpward) {
  WorkerProfile p = grid();
  EXPECT_DOUBLE_EQ(p.decodeItlMs(1, 1000), 11);
  EXPECT_DOUBLE_EQ(p.decodeItlMs(9, 3000), 37);
  EXPECT_DOUBLE_EQ(p.decodeItlMs(5, 2000), 20);  // the mean of the four corners
  // past the largest batch: the slope of the last segment (+24 over 8 at 3000).
  EXPECT_DOUBLE_EQ(p.decodeItlMs(17, 3000), 61);
  // below the grid: the nearest point, never below the smallest ITL.
  EXPECT_DOUBLE_EQ(p.decodeItlMs(0.5, 10), 11);
  EXPECT_EQ(p.maxBatchForItl(20, 2000), 5);
  EXPECT_EQ(p.maxBatchForItl(10, 1000), 0);
  // the KV capacity caps the batch: 100000 tokens / 20000 a sequence.
  EXPECT_EQ(p.maxBatchForItl(1e9, 20000), 5);
}

TEST(WorkerProfileTest, RefusesBrokenProfilesWithTheReason) {
  EXPECT_FALSE(WorkerProfile::create({}, {{1, 1, 1}}, 1, 1).ok());
  EXPECT_FALSE(WorkerProfile::create({{100, 1}, {100, 2}}, {{1, 1, 1}}, 1, 1).ok());
  EXPECT_FALSE(WorkerProfile::create({{100, -1}}, {{1, 1, 1}}, 1, 1).ok());
  absl::StatusOr<WorkerProfile> holes = WorkerProfile::create({{100, 1}}, {{1, 1, 1}, {2, 2, 2}}, 1, 1);
  ASSERT_FALSE(holes.ok());
  EXPECT_NE(holes.status().message().find("grid"), std::string::npos) << holes.status();
  EXPECT_FALSE(WorkerProfile::fromJson(nlohmann::json::parse(R"({"prefill": "x"})")).ok());
  EXPECT_FALSE(WorkerProfile::fromJson(nlohmann::json::parse(
      R"({"prefill": [{"prompt_tokens": 1, "tokens_per_s": 1}], "decode": [{"batch": 1, "context_tokens": 1}],
          "kv_capacity_tokens": 1, "max_batch": 1})")).ok());
  EXPECT_EQ(WorkerProfile::load("/nonexistent/profile.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(WorkerProfileTest, JsonRoundTripKeepsPointsAndMetadata) {
  WorkerProfile p = grid();
  p.metadata["source"] = "constructed";
  const std::string path = (std::filesystem::temp_directory_path() / "tandem_profile_test.json").string();
  ASSERT_TRUE(p.save(path).ok());
  absl::StatusOr<WorkerProfile> q = WorkerProfile::load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->toJson(), p.toJson());
  EXPECT_EQ(q->metadata["source"], "constructed");
  EXPECT_EQ(q->maxBatch(), 64);
}

TEST(WorkerProfileTest, ShippedProfilesLoadAndSayWhereTheyComeFrom) {
  for (const char* name : {"mi300x-llama3-8b.json", "cpu-stories260k.json"}) {
    absl::StatusOr<WorkerProfile> p =
        WorkerProfile::load(tandem::testing::sourceDir() + "/planner/profiles/" + name);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    EXPECT_TRUE(p->metadata.contains("source")) << name;
    EXPECT_TRUE(p->metadata.contains("hardware")) << name;
    // ITL grows with the batch (the measured CPU one is too noisy in context to say more).
    EXPECT_LT(p->decodeItlMs(1, 256), p->decodeItlMs(32, 256)) << name;
  }
  absl::StatusOr<WorkerProfile> gpu =
      WorkerProfile::load(tandem::testing::sourceDir() + "/planner/profiles/mi300x-llama3-8b.json");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->metadata["derived"], true);
  EXPECT_LT(gpu->decodeItlMs(64, 2048), gpu->decodeItlMs(64, 32768));
}

}  // namespace
}  // namespace tandem::planner
