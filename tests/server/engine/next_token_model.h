// A StepModel for engine tests: after every token t it favors (t + 1) mod 8
// with logit 5, every other token 0; one row for each logit row the batch
// asks for (every token of an all_logits chunk). Counts its calls, can fail
// one, and records the rows of all_logits chunks per step.
#pragma once

#include <vector>

#include "server/engine/engine.h"
#include "server/engine/step_model.h"

namespace tandem::engine::testing {

inline constexpr int kNextTokenVocab = 8;

// a small engine for these tests: blocks of 4, chunks of 4, 64 tokens a
// step and a context of 64.
inline EngineConfig smallEngineConfig(int num_blocks) {
  EngineConfig c;
  c.num_blocks = num_blocks;
  c.block_size = 4;
  c.scheduler.max_num_batched_tokens = 64;
  c.scheduler.chunk_size = 4;
  c.scheduler.max_model_len = 64;
  return c;
}

class NextTokenModel : public StepModel {
 public:
  absl::Status forward(const Batch& batch, std::vector<float>* logits) override {
    ++calls;
    if (calls == fail_on_call) return absl::InternalError("device lost");
    logits->clear();
    int scored = 0;
    for (const SequenceChunk& c : batch.seqs) {
      const int rows = c.numLogitRows();
      if (c.all_logits) scored += rows;
      for (size_t i = c.tokens.size() - rows; i < c.tokens.size(); ++i) {
        std::vector<float> row(kNextTokenVocab, 0.0f);
        row[(c.tokens[i] + 1) % kNextTokenVocab] = 5.0f;
        logits->insert(logits->end(), row.begin(), row.end());
      }
    }
    scored_rows_per_step.push_back(scored);
    return absl::OkStatus();
  }

  int calls = 0;
  int fail_on_call = -1;
  std::vector<int> scored_rows_per_step;
};

}  // namespace tandem::engine::testing
