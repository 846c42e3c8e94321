#include "bench/gpu/oracle_check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "nlohmann/json.hpp"
#include "server/engine/model_runner.h"

namespace tandem::bench::gpu {
namespace {

constexpr int kBlockSize = 16;

struct Case {
  std::vector<int32_t> prompt, completion;
  std::vector<float> gaps;
};

absl::StatusOr<std::vector<Case>> readOracle(const std::string& path) {
  auto text = readFile(path);
  if (!text.ok()) return text.status();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("cases")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an oracle file"));
  }
  std::vector<Case> out;
  for (const auto& c : j.at("cases")) {
    out.push_back({c.at("prompt_ids").get<std::vector<int32_t>>(),
                   c.at("completion_ids").get<std::vector<int32_t>>(),
                   c.value("top2_gaps", std::vector<float>{})});
  }
  return out;
}

int32_t argmax(const float* row, int n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

}  // namespace

absl::StatusOr<std::vector<OracleResult>> runOracle(kernels::hip::HipBackend& backend,
                                                    const OracleOptions& options) {
  auto cases = readOracle(options.oracle_path);
  if (!cases.ok()) return cases.status();
  const int n = options.prompts > 0 ? std::min<int>(options.prompts, cases->size())
                                    : static_cast<int>(cases->size());
  std::vector<OracleResult> results(n);
  int max_len = 0;
  for (int s = 0; s < n; ++s) {
    Case& c = (*cases)[s];
    if (options.tokens > 0 && options.tokens < static_cast<int>(c.completion.size())) {
      c.completion.resize(options.tokens);
    }
    if (options.tie_gap > 0 && c.gaps.size() < c.completion.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.oracle_path, ": case ", s, " has no top2_gaps for --tie-gap"));
    }
    c.gaps.resize(c.completion.size());
    results[s].prompt_index = s;
    results[s].want = c.completion;
    results[s].gaps = c.gaps;
    results[s].tie_gap = options.tie_gap;
    max_len = std::max<int>(max_len, c.prompt.size() + c.completion.size());
  }
  const int blocks_per_seq = (max_len + kBlockSize - 1) / kBlockSize;
  auto blocksOf = [&](int s) {
    std::vector<int32_t> table(blocks_per_seq);
    for (int b = 0; b < blocks_per_seq; ++b) table[b] = s * blocks_per_seq + b;
    return table;
  };

  auto weights = model::ModelWeights::load(options.model_path);
  if (!weights.ok()) return weights.status();
  auto runner = engine::ModelRunner::create(**weights, backend, n * blocks_per_seq, kBlockSize);
  if (!runner.ok()) return runner.status();
  (*runner)->enableStepGraphs(options.graphs);
  const int vocab = (*runner)->config().vocab_size;
  std::vector<float> logits;

  // prefill: every prompt in chunks, all prompts in one batch per chunk
  for (int begin = 0;; begin += options.chunk) {
    engine::Batch b;
    for (int s = 0; s < n; ++s) {
      const std::vector<int32_t>& p = (*cases)[s].prompt;
      if (begin >= static_cast<int>(p.size())) continue;
      const int end = std::min<int>(p.size(), begin + options.chunk);
      b.seqs.push_back({static_cast<generation::SeqId>(s),
                        {p.begin() + begin, p.begin() + end},
                        begin,
                        blocksOf(s),
                        end == static_cast<int>(p.size())});
    }
    if (b.seqs.empty()) break;
    if (absl::Status st = (*runner)->forward(b, &logits); !st.ok()) return st;
    int row = 0;
    for (const engine::SequenceChunk& c : b.seqs) {
      if (c.needs_logits) results[c.seq_id].got.push_back(argmax(&logits[row++ * vocab], vocab));
    }
  }
  // decode: the sequences that still want tokens, together
  for (;;) {
    engine::Batch b;
    for (int s = 0; s < n; ++s) {
      if (results[s].got.size() >= results[s].want.size()) continue;
      const size_t done = results[s].got.size();
      const int pos = static_cast<int>((*cases)[s].prompt.size() + done) - 1;
      // teacher-forced under a tie gap: the oracle's token, not our own
      const int32_t fed = options.tie_gap > 0 ? results[s].want[done - 1] : results[s].got.back();
      b.seqs.push_back({static_cast<generation::SeqId>(s), {fed}, pos, blocksOf(s), true});
    }
    if (b.seqs.empty()) break;
    if (absl::Status st = (*runner)->forward(b, &logits); !st.ok()) return st;
    for (size_t i = 0; i < b.seqs.size(); ++i) {
      results[b.seqs[i].seq_id].got.push_back(argmax(&logits[i * vocab], vocab));
    }
  }
  for (OracleResult& r : results) r.got.resize(std::min(r.got.size(), r.want.size()));
  return results;
}

}  // namespace tandem::bench::gpu
