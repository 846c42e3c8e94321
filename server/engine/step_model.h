// What the engine needs from a model: one forward step over a Batch. The
// model runner implements it; tests implement it with fakes, so the engine
// loop is tested without weights.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/engine/batch.h"

namespace tandem::engine {

class StepModel {
 public:
  virtual ~StepModel() = default;

  // computes one step and sets *logits to [batch.numLogitRows(), vocab]
  // row-major F32, in batch order: each chunk's SequenceChunk::numLogitRows()
  // rows (every token's with all_logits, else the last token's when
  // needs_logits). the KV of every token of the batch is written to its
  // slots. an error means the step's results are lost.
  virtual absl::Status forward(const Batch& batch, std::vector<float>* logits) = 0;

  // greedy decoding's pick of one logit row: the first maximum of the raw
  // logits and its log-probability (as Sampler::sample reports a greedy
  // request's token without penalties, bias or mask).
  struct GreedyPick {
    int32_t token = 0;
    float logprob = 0.0f;
  };
  // whether forwardGreedy() picks where the logits are (a device backend:
  // the step then downloads 8 bytes a row instead of the vocabulary).
  virtual bool picksGreedyWhereTheLogitsAre() const { return false; }
  // computes one step as forward() does and sets *picks to each logit row's
  // greedy pick instead of the logits. Unimplemented where the model has no
  // such path.
  virtual absl::Status forwardGreedy(const Batch& batch, std::vector<GreedyPick>* picks) {
    (void)batch;
    (void)picks;
    return absl::UnimplementedError("this model returns logits only");
  }
};

}  // namespace tandem::engine
