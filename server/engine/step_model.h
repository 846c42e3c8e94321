// What the engine needs from a model: one forward step over a Batch. The
// model runner implements it; tests implement it with fakes, so the engine
// loop is tested without weights.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "kernels/row_sampling.h"
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

  // one logit row's token picked where the logits are, and its
  // log-probability under the raw logits (as Sampler::sample reports it).
  struct Pick {
    int32_t token = 0;
    float logprob = 0.0f;
  };
  // whether forwardPicks() samples where the logits are (a device backend:
  // the step then downloads 8 bytes a row instead of the vocabulary).
  virtual bool picksWhereTheLogitsAre() const { return false; }
  // computes one step as forward() does and sets *picks to each logit row
  // sampled as rows[i] says (one entry a logit row, in batch order) instead
  // of the logits. Unimplemented where the model has no such path.
  virtual absl::Status forwardPicks(const Batch& batch, std::span<const kernels::RowSampling> rows,
                                    std::vector<Pick>* picks) {
    (void)batch;
    (void)rows;
    (void)picks;
    return absl::UnimplementedError("this model returns logits only");
  }
};

}  // namespace tandem::engine
