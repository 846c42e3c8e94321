// The device sampler (HipBackend::sampleTokens, kernels/hip/sampling.h) on
// the host emulator at wave 64 and 32 against the engine's host Sampler:
// the same logits, parameters, seen tokens, bias and mask, and the same
// seeded draw must give the same token (and the raw log-probability within
// float sums). Rows of one token and rows longer than a block, ties at the
// top-k cut, min_p, top_p, penalties with repeated and out-of-vocabulary
// ids, a bias named twice, masks, greedy and sampled rows in one call.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "server/engine/sampler.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels::hip {
namespace {

using HipSamplingTest = BackendTest;

struct Case {
  generation::SamplingParams params;
  std::vector<int32_t> prompt, output;
  bool masked = false;
};

std::vector<Case> cases(int vocab) {
  std::vector<Case> out;
  const auto add = [&](auto&& edit) {
    Case c;
    c.params.temperature = 1.0f;
    edit(c);
    out.push_back(std::move(c));
  };
  const int32_t last = vocab - 1;
  const std::vector<int32_t> seen = {0, 3, 3, last, 7 % vocab, -1, vocab, 3, last};
  add([](Case& c) { c.params.temperature = 0.0f; });
  add([&](Case& c) {  // greedy after penalties and a bias named twice
    c.params.temperature = 0.0f;
    c.params.repetition_penalty = 1.7f;
    c.params.presence_penalty = 0.5f;
    c.params.frequency_penalty = 0.25f;
    c.prompt = seen;
    c.output = {last, 3, 3, 1 % vocab};
    c.params.logit_bias = {{last, 2.0f}, {0, -1.5f}, {last, 1.0f}};
  });
  add([&](Case& c) {  // greedy under a mask
    c.params.temperature = 0.0f;
    c.masked = true;
  });
  add([](Case& c) { c.params.temperature = 0.7f; });
  add([](Case& c) { c.params.top_k = 5; });
  add([](Case& c) {
    c.params.top_k = 40;
    c.params.temperature = 1.3f;
  });
  add([](Case& c) { c.params.top_p = 0.9f; });
  add([](Case& c) {
    c.params.top_p = 0.5f;
    c.params.top_k = 50;
  });
  add([](Case& c) { c.params.min_p = 0.1f; });
  add([&](Case& c) {  // everything at once
    c.params.temperature = 0.8f;
    c.params.top_k = 20;
    c.params.top_p = 0.95f;
    c.params.min_p = 0.02f;
    c.params.repetition_penalty = 1.2f;
    c.params.presence_penalty = -0.5f;
    c.params.frequency_penalty = 1.0f;
    c.prompt = seen;
    c.output = {3, last, 3};
    c.params.logit_bias = {{1 % vocab, 3.0f}};
    c.masked = true;
  });
  return out;
}

// about a third of the vocabulary allowed, always token 1 % vocab.
grammar::TokenMask maskFor(int vocab, uint64_t seed) {
  grammar::TokenMask m(vocab);
  std::mt19937_64 rng(seed);
  for (int t = 0; t < vocab; ++t) {
    if (rng() % 3 == 0) m.set(t);
  }
  m.set(1 % vocab);
  return m;
}

TEST_P(HipSamplingTest, ASeededSampleEqualsTheHostSamplers) {
  constexpr int kSeeds = 3;
  for (int vocab : {1, 37, 700}) {
    const std::vector<Case> cs = cases(vocab);
    const int rows = static_cast<int>(cs.size()) * kSeeds;
    Tensor logits = random(DType::kF32, rows, vocab, 4.0f);
    float* x = logits.as<float>();
    for (int r = 0; r < rows && vocab > 30; ++r) {
      // ties: the top five logits equal in half the rows (the top-k cut
      // falls among them, lower ids first), and logits rounded to 1/4
      if (r % 2 == 0) {
        for (int j : {2, 9, 17, 25, 29}) x[r * vocab + j] = 9.0f;
      }
      if (r % 3 == 0) {
        for (int j = 0; j < vocab; ++j) x[r * vocab + j] = std::round(x[r * vocab + j] * 4) / 4;
      }
    }
    std::vector<grammar::TokenMask> masks;
    masks.reserve(rows);
    std::vector<RowSampling> device_rows;
    std::vector<int32_t> want_tokens;
    std::vector<float> want_logprobs;
    engine::Sampler sampler;
    for (int r = 0; r < rows; ++r) {
      const Case& c = cs[r / kSeeds];
      const uint64_t seed = 1000 + r;
      masks.push_back(maskFor(vocab, seed));
      const grammar::TokenMask* mask = c.masked ? &masks.back() : nullptr;
      engine::SamplerRng rng(seed);
      const engine::SampleResult s =
          sampler.sample(std::span<const float>(x + r * vocab, vocab), c.params,
                         {c.prompt, c.output}, rng, mask);
      want_tokens.push_back(s.token);
      want_logprobs.push_back(s.logprob);
      RowSampling row = engine::rowSampling(c.params, {c.prompt, c.output});
      if (mask != nullptr) {
        row.mask_words = mask->words();
        row.mask_tokens = mask->numTokens();
      }
      if (!row.greedy) row.u = engine::SamplerRng(seed).uniform();
      device_rows.push_back(row);
    }
    const Tensor ids = toDevice(zeros(DType::kI32, rows, 1));
    const Tensor logprobs = toDevice(zeros(DType::kF32, rows, 1));
    backend().sampleTokens(toDevice(logits), device_rows, ids, logprobs);
    const Tensor got_ids = toHost(ids), got_lp = toHost(logprobs);
    for (int r = 0; r < rows; ++r) {
      EXPECT_EQ(got_ids.as<int32_t>()[r], want_tokens[r]) << "vocab " << vocab << " row " << r;
      EXPECT_NEAR(got_lp.as<float>()[r], want_logprobs[r], 1e-4 * (1.0 + std::abs(want_logprobs[r])))
          << "vocab " << vocab << " row " << r;
    }
    // a second call: the marks the first left are zero again (penalties
    // counted twice would change the greedy-with-penalties rows)
    backend().sampleTokens(toDevice(logits), device_rows, ids, logprobs);
    const Tensor again = toHost(ids);
    for (int r = 0; r < rows; ++r) {
      EXPECT_EQ(again.as<int32_t>()[r], want_tokens[r]) << "again: vocab " << vocab << " row " << r;
    }
  }
}

// the draws spread over the kept tokens as the host's do: over many seeds
// of one row, every token the host sampler takes the device takes too.
TEST_P(HipSamplingTest, ManySeedsOfOneRowGiveTheHostsTokens) {
  constexpr int kVocab = 300, kRows = 64;
  const Tensor one = random(DType::kF32, 1, kVocab, 2.0f);
  Tensor logits = zeros(DType::kF32, kRows, kVocab);
  for (int r = 0; r < kRows; ++r) {
    std::copy(one.as<float>(), one.as<float>() + kVocab, logits.as<float>() + r * kVocab);
  }
  generation::SamplingParams p;
  p.temperature = 1.5f;
  p.top_p = 0.8f;
  engine::Sampler sampler;
  std::vector<RowSampling> rows(kRows);
  std::vector<int32_t> want;
  for (int r = 0; r < kRows; ++r) {
    engine::SamplerRng rng(77 + r);
    want.push_back(sampler.sample(std::span<const float>(one.as<float>(), kVocab), p, {}, rng).token);
    rows[r].greedy = false;
    rows[r].temperature = p.temperature;
    rows[r].top_p = p.top_p;
    rows[r].u = engine::SamplerRng(77 + r).uniform();
  }
  const Tensor ids = toDevice(zeros(DType::kI32, kRows, 1));
  const Tensor logprobs = toDevice(zeros(DType::kF32, kRows, 1));
  backend().sampleTokens(toDevice(logits), rows, ids, logprobs);
  const Tensor got = toHost(ids);
  std::vector<int32_t> distinct(want);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_GT(distinct.size(), 5u) << "the draws should spread";
  for (int r = 0; r < kRows; ++r) EXPECT_EQ(got.as<int32_t>()[r], want[r]) << "seed " << 77 + r;
}

INSTANTIATE_TEST_SUITE_P(Emu, HipSamplingTest, ::testing::ValuesIn(hipOnEmulatorBackends()),
                         backendName);

}  // namespace
}  // namespace tandem::kernels::hip
