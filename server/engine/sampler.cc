#include "server/engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "common/status.h"

namespace tandem::engine {
namespace {

// candidates are ranked by logit, then by lower token id, so every sort and
// cutoff is deterministic.
struct ByLogitDesc {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  }
};

double logSumExp(std::span<const float> logits) {
  const float m = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - m);
  return m + std::log(sum);
}

}  // namespace

kernels::RowSampling rowSampling(const generation::SamplingParams& params,
                                 const TokenHistory& history) {
  kernels::RowSampling row;
  row.greedy = params.isGreedy();
  row.temperature = params.temperature;
  row.top_k = params.top_k;
  row.top_p = params.top_p;
  row.min_p = params.min_p;
  row.repetition_penalty = params.repetition_penalty;
  row.presence_penalty = params.presence_penalty;
  row.frequency_penalty = params.frequency_penalty;
  row.prompt = history.prompt;
  row.output = history.output;
  row.logit_bias = params.logit_bias;
  return row;
}

SampleResult Sampler::sample(std::span<const float> logits, const generation::SamplingParams& params,
                             const TokenHistory& history, SamplerRng& rng,
                             const grammar::TokenMask* allowed) {
  TANDEM_CHECK(!logits.empty());
  work_.assign(logits.begin(), logits.end());
  applyPenalties(work_, params, history);
  // logit_bias (OpenAI: added to the logits before sampling); ids outside
  // the vocabulary were refused at submission and are ignored here.
  for (const auto& [token, bias] : params.logit_bias) {
    if (token >= 0 && token < static_cast<int32_t>(work_.size())) work_[token] += bias;
  }
  if (allowed != nullptr) applyMask(work_, *allowed);

  SampleResult result;
  result.token = params.isGreedy() ? argmax() : draw(params, rng);
  const double lse = logSumExp(logits);
  result.logprob = static_cast<float>(logits[result.token] - lse);
  if (params.logprobs) result.top_logprobs = topLogprobs(logits, *params.logprobs, lse);
  return result;
}

generation::PromptTokenLogprob Sampler::score(std::span<const float> logits, int32_t token, int top_n) {
  TANDEM_CHECK(token >= 0 && static_cast<size_t>(token) < logits.size());
  const double lse = logSumExp(logits);
  generation::PromptTokenLogprob out;
  out.token = token;
  out.logprob = static_cast<float>(logits[token] - lse);
  out.rank = 1 + static_cast<int32_t>(std::count_if(
                     logits.begin(), logits.end(), [&](float x) { return x > logits[token]; }));
  if (top_n > 0) out.top_logprobs = topLogprobs(logits, top_n, lse);
  return out;
}

void Sampler::applyPenalties(std::span<float> logits, const generation::SamplingParams& params,
                             const TokenHistory& history) {
  const auto vocab = static_cast<int32_t>(logits.size());
  const bool repetition = params.repetition_penalty != 1.0f;
  const bool additive = params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
  if (!repetition && !additive) return;
  auto in_vocab = [vocab](int32_t t) { return t >= 0 && t < vocab; };
  // scratch entries are reset after use, so each call costs O(history).
  counts_.resize(logits.size(), 0);
  seen_.resize(logits.size(), 0);
  if (additive) {
    for (int32_t t : history.output) {
      if (in_vocab(t)) ++counts_[t];
    }
    for (int32_t t : history.output) {
      if (!in_vocab(t) || counts_[t] == 0) continue;
      logits[t] -= params.frequency_penalty * static_cast<float>(counts_[t]) +
                  params.presence_penalty;
      counts_[t] = 0;  // each distinct token is penalized once.
    }
  }
  if (repetition) {
    for (auto tokens : {history.prompt, history.output}) {
      for (int32_t t : tokens) {
        if (!in_vocab(t) || seen_[t]) continue;
        seen_[t] = 1;
        float& x = logits[t];
        x = x > 0 ? x / params.repetition_penalty : x * params.repetition_penalty;
      }
    }
    for (auto tokens : {history.prompt, history.output}) {
      for (int32_t t : tokens) {
        if (in_vocab(t)) seen_[t] = 0;
      }
    }
  }
}

void Sampler::applyMask(std::span<float> logits, const grammar::TokenMask& allowed) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const std::vector<uint64_t>& words = allowed.words();
  const size_t n = std::min(logits.size(), static_cast<size_t>(allowed.numTokens()));
  // 64 tokens a word: whole words allowed or refused cost one test.
  size_t i = 0;
  for (size_t w = 0; i < n; ++w, i += 64) {
    const uint64_t bits = words[w];
    const size_t end = std::min(i + 64, n);
    if (bits == ~uint64_t{0} && end - i == 64) continue;
    if (bits == 0) {
      std::fill(logits.begin() + i, logits.begin() + end, kNegInf);
      continue;
    }
    // a mixed word: touch only the fewer of its refused or allowed tokens.
    const uint64_t in_range = end - i == 64 ? ~uint64_t{0} : (uint64_t{1} << (end - i)) - 1;
    uint64_t refused = ~bits & in_range;
    if (std::popcount(refused) <= 32) {
      for (; refused != 0; refused &= refused - 1) logits[i + std::countr_zero(refused)] = kNegInf;
      continue;
    }
    float kept[64];
    int n_kept = 0;
    for (uint64_t b = bits & in_range; b != 0; b &= b - 1) kept[n_kept++] = logits[i + std::countr_zero(b)];
    std::fill(logits.begin() + i, logits.begin() + end, kNegInf);
    n_kept = 0;
    for (uint64_t b = bits & in_range; b != 0; b &= b - 1) logits[i + std::countr_zero(b)] = kept[n_kept++];
  }
  if (logits.size() > n) std::fill(logits.begin() + n, logits.end(), kNegInf);
}

int32_t Sampler::argmax() const {
  // the first maximum, so ties go to the lowest id.
  return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
}

int32_t Sampler::draw(const generation::SamplingParams& params, SamplerRng& rng) {
  // first, so that every draw takes exactly one number, whatever follows
  // (the device sampler is handed it before it sees the logits)
  const double uniform = rng.uniform();
  const float inv_t = 1.0f / params.temperature;
  for (float& x : work_) x *= inv_t;
  const float max_logit = *std::max_element(work_.begin(), work_.end());

  // min_p: p / p_max = exp(x - max) >= min_p  <=>  x >= max + log(min_p).
  const float min_logit = params.min_p > 0.0f
                              ? max_logit + std::log(params.min_p)
                              : -std::numeric_limits<float>::infinity();
  candidates_.clear();
  for (int32_t t = 0; t < static_cast<int32_t>(work_.size()); ++t) {
    if (work_[t] >= min_logit && work_[t] > -std::numeric_limits<float>::infinity()) {
      candidates_.push_back(t);
    }
  }
  if (candidates_.empty()) return argmax();  // every logit is -inf.
  const ByLogitDesc order{work_.data()};
  bool sorted = false;
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < candidates_.size()) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + params.top_k,
                      candidates_.end(), order);
    candidates_.resize(params.top_k);
    sorted = true;
  }

  probs_.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    probs_[i] = std::exp(static_cast<double>(work_[candidates_[i]]) - max_logit);
    total += probs_[i];
  }
  if (params.top_p < 1.0f) {
    if (!sorted) {
      std::sort(candidates_.begin(), candidates_.end(), order);
      for (size_t i = 0; i < candidates_.size(); ++i) {
        probs_[i] = std::exp(static_cast<double>(work_[candidates_[i]]) - max_logit);
      }
      sorted = true;
    }
    // keep the shortest most-likely prefix reaching top_p of the mass.
    const double target = params.top_p * total;
    double cum = 0.0;
    size_t keep = 0;
    while (keep < candidates_.size()) {
      cum += probs_[keep++];
      if (cum >= target) break;
    }
    candidates_.resize(keep);
    probs_.resize(keep);
    total = cum;
  }

  // the draw walks the kept tokens in id order, as the device sampler does
  // (kernels/hip/sampling.h), so a seeded request takes the same token there.
  if (sorted) {
    std::sort(candidates_.begin(), candidates_.end());
    for (size_t i = 0; i < candidates_.size(); ++i) {
      probs_[i] = std::exp(static_cast<double>(work_[candidates_[i]]) - max_logit);
    }
  }
  const double u = uniform * total;
  double cum = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cum += probs_[i];
    if (u < cum) return candidates_[i];
  }
  return candidates_.back();  // rounding left u at the very top.
}

std::vector<generation::TokenLogprob> Sampler::topLogprobs(std::span<const float> logits, int n,
                                               double log_sum_exp) {
  const auto vocab = static_cast<int32_t>(logits.size());
  n = std::min(n, static_cast<int>(vocab));
  std::vector<int32_t> ids(vocab);
  for (int32_t t = 0; t < vocab; ++t) ids[t] = t;
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), ByLogitDesc{logits.data()});
  std::vector<generation::TokenLogprob> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    out.push_back({ids[i], static_cast<float>(logits[ids[i]] - log_sum_exp)});
  }
  return out;
}

}  // namespace tandem::engine
