// The hip backend's sampling where the logits are (hip_backend.h): a step
// of plain greedy rows takes the greedy kernel; any other packs its rows'
// parameters, token lists and grammar masks into one upload and runs the
// whole sampler on the device (sampling.h), so either way the step
// downloads a token and a log-probability a row.
#include <algorithm>
#include <vector>

#include "common/status.h"
#include "kernels/hip/backend_check.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/hip_backend.h"
#include "kernels/hip/sampling.h"

namespace tandem::kernels::hip {

namespace {

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

// where each array sits in the packed upload.
struct SampleLayout {
  size_t history = 0, bias_ids = 0, bias_values = 0, mask_words = 0, bytes = 0;
};

SampleLayout layoutFor(std::span<const RowSampling> rows) {
  size_t tokens = 0, biases = 0, words = 0;
  for (const RowSampling& r : rows) {
    tokens += r.prompt.size() + r.output.size();
    biases += r.logit_bias.size();
    words += r.mask_tokens >= 0 ? r.mask_words.size() : 0;
  }
  SampleLayout l;
  l.history = align8(rows.size() * sizeof(DeviceRowSampling));
  l.bias_ids = align8(l.history + tokens * sizeof(int32_t));
  l.bias_values = align8(l.bias_ids + biases * sizeof(int32_t));
  l.mask_words = align8(l.bias_values + biases * sizeof(float));
  l.bytes = l.mask_words + words * sizeof(uint64_t);
  return l;
}

// packs rows into `host` as layoutFor(rows) says.
void pack(std::span<const RowSampling> rows, const SampleLayout& l, unsigned char* host) {
  auto* params = reinterpret_cast<DeviceRowSampling*>(host);
  auto* history = reinterpret_cast<int32_t*>(host + l.history);
  auto* bias_ids = reinterpret_cast<int32_t*>(host + l.bias_ids);
  auto* bias_values = reinterpret_cast<float*>(host + l.bias_values);
  auto* words = reinterpret_cast<uint64_t*>(host + l.mask_words);
  int32_t token_at = 0, bias_at = 0;
  int64_t word_at = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowSampling& r = rows[i];
    DeviceRowSampling& d = params[i];
    d = DeviceRowSampling{};
    d.u = r.u;
    // as Sampler::draw scales: x * (1 / temperature) in float
    d.inv_temperature = r.greedy ? 0.0f : 1.0f / r.temperature;
    d.top_p = r.top_p;
    d.min_p = r.min_p;
    d.repetition_penalty = r.repetition_penalty;
    d.presence_penalty = r.presence_penalty;
    d.frequency_penalty = r.frequency_penalty;
    d.top_k = r.top_k;
    d.history_begin = token_at;
    d.num_prompt = static_cast<int32_t>(r.prompt.size());
    d.num_output = static_cast<int32_t>(r.output.size());
    // std::copy: an empty span may have no data() (memcpy from null is UB)
    std::copy(r.prompt.begin(), r.prompt.end(), history + token_at);
    std::copy(r.output.begin(), r.output.end(), history + token_at + d.num_prompt);
    token_at += d.num_prompt + d.num_output;
    d.bias_begin = bias_at;
    d.num_bias = static_cast<int32_t>(r.logit_bias.size());
    for (const auto& [token, bias] : r.logit_bias) {
      bias_ids[bias_at] = token;
      bias_values[bias_at++] = bias;
    }
    d.mask_tokens = r.mask_tokens;
    d.mask_begin = word_at;
    if (r.mask_tokens >= 0) {
      std::copy(r.mask_words.begin(), r.mask_words.end(), words + word_at);
      word_at += static_cast<int64_t>(r.mask_words.size());
    }
  }
}

}  // namespace

void HipBackend::sampleTokens(const Tensor& logits, std::span<const RowSampling> rows,
                              const Tensor& ids, const Tensor& logprobs) {
  bind();
  TANDEM_CHECK(static_cast<int64_t>(rows.size()) == logits.rows && ids.dtype == DType::kI32 &&
               ids.rows == logits.rows && logprobs.rows == logits.rows);
  bool plain = true;
  for (const RowSampling& r : rows) {
    TANDEM_CHECK(r.mask_tokens < 0 || static_cast<int64_t>(r.mask_words.size()) * 64 >= r.mask_tokens);
    plain = plain && r.plainGreedy();
  }
  if (plain) {  // (no rows at all included)
    greedyTokens(logits, ids, logprobs);
    return;
  }
  const SampleLayout l = layoutFor(rows);
  sample_inputs_host_.resize(l.bytes);
  pack(rows, l, sample_inputs_host_.data());
  auto* inputs = static_cast<unsigned char*>(scratch(sample_inputs_, l.bytes));
  const auto stream = static_cast<hipStream_t>(stream_);
  // from pageable memory: the call returns once the host bytes are read
  check(hipMemcpyAsync(inputs, sample_inputs_host_.data(), l.bytes, hipMemcpyHostToDevice, stream),
        "sampleTokens upload");
  const size_t row_bytes = static_cast<size_t>(logits.rows * logits.cols) * sizeof(float);
  auto* work = static_cast<float*>(scratch(sample_work_, row_bytes));
  const void* marks_before = sample_marks_ != nullptr ? sample_marks_->data() : nullptr;
  auto* marks = static_cast<int32_t*>(scratch(sample_marks_, row_bytes));
  if (marks != marks_before) {  // a new area: zero once, the kernel keeps it so
    check(hipMemsetAsync(marks, 0, sample_marks_->bytes(), stream), "sampleTokens marks");
  }
  check(launchSampleRows(logits.as<float>(), logits.rows, logits.cols,
                         reinterpret_cast<const DeviceRowSampling*>(inputs),
                         reinterpret_cast<const int32_t*>(inputs + l.history),
                         reinterpret_cast<const int32_t*>(inputs + l.bias_ids),
                         reinterpret_cast<const float*>(inputs + l.bias_values),
                         reinterpret_cast<const unsigned long long*>(inputs + l.mask_words), work,
                         marks, ids.as<int32_t>(), logprobs.as<float>(), stream),
        "sampleTokens");
}

}  // namespace tandem::kernels::hip
