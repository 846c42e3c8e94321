#include "tests/server/engine/moe_oracle.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/dtype.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/model/synth.h"
#include "tests/test_paths.h"

namespace tandem::testing {

MoeOracle loadMoeOracle(const std::string& name, const std::string& dtype) {
  const std::string path = sourceDir() + "/models/moe/greedy_oracle_" + name + "-" + dtype + ".json";
  MoeOracle o{name, dtype, "", loadOracle(path)};
  std::ifstream in(path);
  o.shape = nlohmann::json::parse(in)["synth_shape"].get<std::string>();
  return o;
}

std::string synthMoeModel(const MoeOracle& oracle, const std::string& dir, bool hf) {
  model::SynthOptions o;
  o.out = hf ? dir + "/hf" : dir + "/model.gguf";
  o.format = hf ? model::SynthOptions::Format::kHf : model::SynthOptions::Format::kGguf;
  auto shape = model::parseShape(oracle.shape);
  EXPECT_TRUE(shape.ok()) << shape.status();
  o.shape = *shape;
  o.dtype = oracle.dtype == "f16" ? DType::kF16 : oracle.dtype == "q8_0" ? DType::kQ8_0 : DType::kF32;
  o.vocab_from = storiesGguf();
  const absl::Status s = model::writeSynthModel(o);
  EXPECT_TRUE(s.ok()) << s;
  return o.out;
}

namespace {

int32_t argmax(const float* row, int n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

std::vector<int32_t> blocksOf(int seq) {
  std::vector<int32_t> table(kMoeBlocksPerSeq);
  for (int b = 0; b < kMoeBlocksPerSeq; ++b) table[b] = seq * kMoeBlocksPerSeq + b;
  return table;
}

}  // namespace

std::vector<std::vector<int32_t>> greedyTokens(engine::ModelRunner& runner, const MoeOracle& oracle,
                                               const std::vector<int>& seqs, bool forced) {
  const int vocab = runner.config().vocab_size;
  std::vector<std::vector<int32_t>> generated(oracle.cases.size());
  std::vector<float> logits;
  for (int s : seqs) {
    engine::Batch b;
    const std::vector<int32_t>& p = oracle.cases[s].prompt_ids;
    b.seqs.push_back({static_cast<generation::SeqId>(s), p, 0, blocksOf(s), true});
    EXPECT_TRUE(runner.forward(b, &logits).ok());
    generated[s].push_back(argmax(logits.data(), vocab));
  }
  const size_t steps = oracle.cases[seqs[0]].completion_ids.size();
  while (generated[seqs[0]].size() < steps) {
    engine::Batch b;
    for (int s : seqs) {
      const size_t done = generated[s].size();
      const int32_t fed = forced ? oracle.cases[s].completion_ids[done - 1] : generated[s].back();
      const int pos = static_cast<int>(oracle.cases[s].prompt_ids.size() + done) - 1;
      b.seqs.push_back({static_cast<generation::SeqId>(s), {fed}, pos, blocksOf(s), true});
    }
    EXPECT_TRUE(runner.forward(b, &logits).ok());
    for (size_t i = 0; i < seqs.size(); ++i) generated[seqs[i]].push_back(argmax(&logits[i * vocab], vocab));
  }
  return generated;
}

std::vector<std::string> clearMismatches(const MoeOracle& oracle, const std::vector<int>& seqs,
                                         const std::vector<std::vector<int32_t>>& got, float min_gap) {
  std::vector<std::string> out;
  for (int s : seqs) {
    const OracleCase& c = oracle.cases[s];
    for (size_t i = 0; i < c.completion_ids.size() && i < got[s].size(); ++i) {
      if (c.top2_gaps[i] < min_gap || got[s][i] == c.completion_ids[i]) continue;
      out.push_back(absl::StrCat("case ", s, " step ", i, " (gap ", c.top2_gaps[i], ")"));
    }
  }
  return out;
}

}  // namespace tandem::testing
