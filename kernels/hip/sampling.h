// Sampling on the device, so only a token and its log-probability per row
// travel to the host: the greedy pick of raw logits, and the whole sampler
// (penalties, bias, grammar mask, temperature, min_p, top_k, top_p, the
// draw).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// ids[r] = the first maximum of row r of x [rows, cols] F32 (a NaN never
// wins except in column 0, as std::max_element), logprobs[r] = its
// log-probability under the row (x - max - log(sum exp(x - max)), float
// sums).
hipError_t launchGreedy(const float* x, int64_t rows, int64_t cols, int32_t* ids, float* logprobs,
                        hipStream_t stream);

// one row's sampling as the device reads it: a kernels::RowSampling
// (kernels/row_sampling.h) with its token lists as offsets into the arrays
// launchSampleRows takes.
struct DeviceRowSampling {
  double u;               // the draw, uniform in [0, 1)
  float inv_temperature;  // 0: greedy
  float top_p;
  float min_p;
  float repetition_penalty;
  float presence_penalty;
  float frequency_penalty;
  int32_t top_k;          // <= 0: off
  int32_t history_begin;  // the prompt's tokens, then the output's, in `history`
  int32_t num_prompt;
  int32_t num_output;
  int32_t bias_begin;     // in bias_ids and bias_values
  int32_t num_bias;
  int32_t mask_tokens;    // < 0: no mask
  int64_t mask_begin;     // the row's first word in mask_words
};

// ids[r] = row r of logits [rows, cols] F32 sampled as params[r] says, in
// engine::Sampler's order and meaning (server/engine/sampler.h), and
// logprobs[r] = its log-probability under the raw row (float sums). The
// draw walks the kept tokens in id order; its sums run in a fixed order of
// their own, so a seeded draw equals the host's except when u falls within
// rounding of a boundary between two tokens (top-p cuts within 1e-12 of
// its mass alike). work [rows, cols] F32: scratch; marks [rows, cols] I32:
// zero on entry, zero again on return.
hipError_t launchSampleRows(const float* logits, int64_t rows, int64_t cols,
                            const DeviceRowSampling* params, const int32_t* history,
                            const int32_t* bias_ids, const float* bias_values,
                            const unsigned long long* mask_words, float* work, int32_t* marks,
                            int32_t* ids, float* logprobs, hipStream_t stream);

}  // namespace tandem::kernels::hip
