// What the engine needs from a model: one forward step over a Batch. The
// model runner implements it; tests implement it with fakes, so the engine
// loop is tested without weights.
#pragma once

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
};

}  // namespace tandem::engine
