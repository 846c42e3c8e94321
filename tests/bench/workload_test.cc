// The workload parsers on excerpts of the real traces (tests/data/traces),
// and the prompts built from them.
#include <gtest/gtest.h>

#include <set>

#include "bench/loadgen/azure_workload.h"
#include "bench/loadgen/mooncake_workload.h"
#include "bench/loadgen/random_workload.h"
#include "bench/loadgen/sharegpt_workload.h"
#include "bench/loadgen/token_synth.h"
#include "bench/loadgen/workload.h"
#include "common/mapped_file.h"
#include "tests/test_paths.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::bench {
namespace {

std::string trace(const std::string& name) { return tandem::testing::testDataDir() + "/traces/" + name; }

class WorkloadTest : public ::testing::Test {
 protected:
  TokenSynth synth_ = TokenSynth::fromRange(10, 100);
  WorkloadContext ctx_{nullptr, &synth_};
};

TEST_F(WorkloadTest, ParsesMooncakeTraceLines) {
  auto text = readFile(trace("mooncake_conversation_excerpt.jsonl"));
  ASSERT_TRUE(text.ok());
  auto records = parseMooncakeTrace(*text, "excerpt");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 12u);
  EXPECT_EQ((*records)[0].input_length, 6758);
  EXPECT_EQ((*records)[0].output_length, 500);
  EXPECT_EQ((*records)[0].hash_ids, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ((*records)[10].timestamp_ms, 3000);
  EXPECT_EQ((*records)[11].input_length, 87169);
}

TEST_F(WorkloadTest, RejectsMalformedMooncakeLineByNumber) {
  auto r = parseMooncakeTrace("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1}\n", "t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t:2:"), std::string::npos) << r.status();
}

TEST_F(WorkloadTest, MooncakePromptsShareThePrefixTheirHashIdsShare) {
  WorkloadOptions o;
  o.length_scale = 16.0 / 512;  // 16-token blocks
  auto w = createWorkload("mooncake:" + trace("mooncake_conversation_excerpt.jsonl"), o, ctx_);
  ASSERT_TRUE(w.ok()) << w.status();
  auto a = (*w)->next();
  auto b = (*w)->next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->input_tokens, 211);  // round(6758 / 32)
  EXPECT_EQ(a->max_tokens, 16);     // round(500 / 32)
  EXPECT_EQ(a->prompt_ids.size(), 211u);
  EXPECT_EQ(b->prompt_ids.size(), 229u);  // round(7322 / 32)
  // hash id 0 opens both: the first block is identical, the second is not.
  EXPECT_TRUE(std::equal(a->prompt_ids.begin(), a->prompt_ids.begin() + 16, b->prompt_ids.begin()));
  EXPECT_FALSE(std::equal(a->prompt_ids.begin() + 16, a->prompt_ids.begin() + 32, b->prompt_ids.begin() + 16));
  EXPECT_EQ(synth_.blockTokens(1, 16), std::vector<int32_t>(a->prompt_ids.begin() + 16, a->prompt_ids.begin() + 32));
  EXPECT_EQ(*a->timestamp_s, 0.0);
  for (int i = 0; i < 8; ++i) (*w)->next();
  auto k = (*w)->next();
  ASSERT_TRUE(k);
  EXPECT_EQ(k->index, 10u);
  EXPECT_DOUBLE_EQ(*k->timestamp_s, 3.0);
  EXPECT_TRUE((*w)->next());
  EXPECT_FALSE((*w)->next());
}

TEST_F(WorkloadTest, TokenSynthBlocksAreDeterministicAndInThePalette) {
  EXPECT_EQ(synth_.blockTokens(42, 64), synth_.blockTokens(42, 64));
  EXPECT_NE(synth_.blockTokens(42, 64), synth_.blockTokens(43, 64));
  for (int32_t id : synth_.blockTokens(7, 1000)) {
    EXPECT_GE(id, 10);
    EXPECT_LT(id, 110);
  }
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);  // the reference value of splitmix64(state 0)
}

TEST_F(WorkloadTest, ParsesAzureTimestampsAndCounts) {
  auto t = parseTraceTimestamp("2023-11-16 18:15:46.6805900");
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, 1700158546.68059, 1e-6);
  EXPECT_FALSE(parseTraceTimestamp("2023-13-16 18:15:46"));
  EXPECT_FALSE(parseTraceTimestamp("yesterday"));

  WorkloadOptions o;
  auto w = createWorkload("azure:" + trace("azure_llm_2023_conv_excerpt.csv"), o, ctx_);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE((*w)->hasTimestamps());
  auto a = (*w)->next();
  auto b = (*w)->next();
  EXPECT_EQ(a->input_tokens, 374);
  EXPECT_EQ(a->max_tokens, 44);
  EXPECT_EQ(a->prompt_ids.size(), 374u);
  EXPECT_DOUBLE_EQ(*a->timestamp_s, 0.0);
  EXPECT_NEAR(*b->timestamp_s, 4.314579, 1e-6);
  EXPECT_EQ(b->input_tokens, 396);
  EXPECT_EQ(b->max_tokens, 109);
  size_t n = 2;
  while ((*w)->next()) ++n;
  EXPECT_EQ(n, 12u);
}

TEST_F(WorkloadTest, RejectsAzureCsvWithoutItsHeader) {
  auto r = parseAzureTrace("2023-11-16 18:15:46.68,374,44\n", "x.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.csv:1"), std::string::npos);
  auto bad = parseAzureTrace("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,many,44\n", "y.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("y.csv:2"), std::string::npos);
}

TEST_F(WorkloadTest, ShareGptTakesTheFirstHumanMessageAndItsReply) {
  auto text = readFile(trace("sharegpt_excerpt.json"));
  ASSERT_TRUE(text.ok());
  auto pairs = parseShareGpt(*text, "sharegpt");
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 3u);  // a3 has no reply
  EXPECT_EQ((*pairs)[0].prompt, "Once upon a time there was a little cat.");
  EXPECT_EQ((*pairs)[0].reply, "The cat liked to play in the sun with her friend.");
  EXPECT_EQ((*pairs)[1].prompt, "Tell me a story about a dog.");
  EXPECT_EQ((*pairs)[2].prompt, "Say hi.");
  EXPECT_EQ((*pairs)[2].reply, "Hi.");
}

TEST_F(WorkloadTest, ShareGptAsksForTheReplyLengthInTokens) {
  auto tok = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(tok.ok()) << tok.status();
  WorkloadContext ctx{tok->get(), &synth_};
  auto w = createWorkload("sharegpt:" + trace("sharegpt_excerpt.json"), WorkloadOptions{}, ctx);
  ASSERT_TRUE(w.ok()) << w.status();
  auto a = (*w)->next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->prompt_text, "Once upon a time there was a little cat.");
  EXPECT_EQ(a->input_tokens, static_cast<int>((*tok)->encode(a->prompt_text, true).size()));
  EXPECT_EQ(a->max_tokens,
            static_cast<int>((*tok)->encode("The cat liked to play in the sun with her friend.", false).size()));
}

TEST_F(WorkloadTest, RandomLengthsStayInTheirRange) {
  WorkloadOptions o;
  o.input_len = 100;
  o.output_len = 10;
  o.range_ratio = 0.5;
  auto w = createWorkload("random", o, ctx_);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->endless());
  std::set<int> seen;
  for (int i = 0; i < 500; ++i) {
    auto r = (*w)->next();
    EXPECT_EQ(r->index, static_cast<uint64_t>(i));
    EXPECT_GE(r->input_tokens, 50);
    EXPECT_LE(r->input_tokens, 150);
    EXPECT_EQ(r->prompt_ids.size(), static_cast<size_t>(r->input_tokens));
    EXPECT_GE(r->max_tokens, 5);
    EXPECT_LE(r->max_tokens, 15);
    seen.insert(r->input_tokens);
  }
  EXPECT_GT(seen.size(), 50u);
}

TEST_F(WorkloadTest, RandomLengthsCycleThroughALengthsFile) {
  std::string dir = tandem::testing::makeTempDir();
  std::string path = dir + "/lengths.csv";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("input,output\n12,3\n\n40,7\n", f);
  std::fclose(f);
  WorkloadOptions o;
  o.lengths_file = path;
  auto w = createWorkload("random", o, ctx_);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<std::pair<int, int>> got;
  for (int i = 0; i < 3; ++i) {
    auto r = (*w)->next();
    got.emplace_back(r->input_tokens, r->max_tokens);
  }
  EXPECT_EQ(got, (std::vector<std::pair<int, int>>{{12, 3}, {40, 7}, {12, 3}}));
  std::remove(path.c_str());
}

TEST_F(WorkloadTest, MultiTurnEmitsTurnByTurnWithThinkTime) {
  auto tok = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(tok.ok());
  auto synth = TokenSynth::fromTokenizer(**tok);
  ASSERT_TRUE(synth.ok());
  WorkloadContext ctx{tok->get(), &*synth};
  WorkloadOptions o;
  o.users = 3;
  o.turns = 2;
  o.think_time_s = 0.5;
  o.input_len = 8;
  auto w = createWorkload("multiturn", o, ctx);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<std::pair<int64_t, int>> order;
  while (auto r = (*w)->next()) {
    order.emplace_back(r->session_id, r->turn);
    EXPECT_FALSE(r->prompt_text.empty());
    EXPECT_EQ(r->think_time_s, r->turn > 0 ? 0.5 : 0.0);
  }
  EXPECT_EQ(order, (std::vector<std::pair<int64_t, int>>{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}}));
}

TEST_F(WorkloadTest, RejectsUnknownWorkloads) {
  EXPECT_FALSE(createWorkload("zipf", WorkloadOptions{}, ctx_).ok());
  EXPECT_FALSE(createWorkload("mooncake:", WorkloadOptions{}, ctx_).ok());
  EXPECT_EQ(createWorkload("azure:/nonexistent.csv", WorkloadOptions{}, ctx_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(WorkloadTest, SynthFromTheStoriesVocabularyAvoidsSpecialAndControlTokens) {
  auto tok = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(tok.ok());
  auto synth = TokenSynth::fromTokenizer(**tok);
  ASSERT_TRUE(synth.ok()) << synth.status();
  std::mt19937_64 rng(1);
  for (int32_t id : synth->randomTokens(rng, 2000)) {
    EXPECT_FALSE((*tok)->isSpecial(id)) << id;
    std::string bytes = (*tok)->tokenBytes(id);
    ASSERT_FALSE(bytes.empty()) << id;
    for (unsigned char c : bytes) EXPECT_GE(c, 0x20) << "token " << id << " holds a control byte";
  }
}

}  // namespace
}  // namespace tandem::bench
