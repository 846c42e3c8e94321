// The per-token cost of structured output: for each vocabulary, the time the
// engine spends per sampled token on the grammar (the allowed-token mask,
// applying it to a vocab-sized logit row, advancing the matcher), after
// warm-up and cold, against the decode step of a model on the same CPU in
// the same run.
//
//   grammar_mask_bench MODEL THREADS REPEATS WALKS TOKENIZER_DIR...
//
// MODEL: the model whose decode step is the yardstick (bench/grammar_mask.sh
// makes a stories110M-shape one). Each TOKENIZER_DIR holds tokenizer.json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "server/engine/engine_assembly.h"
#include "server/engine/sampler.h"
#include "text/grammar/grammar_cache.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"
#include "text/grammar/token_matcher.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tandem::grammar::GrammarCache;
using tandem::grammar::TokenMask;
using tandem::grammar::TokenMatcher;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// an order with nested items: strings, bounded integers, numbers, enums.
const char* kSchema = R"({"type":"object","properties":{"order":{"type":"object","properties":{
  "id":{"type":"integer","minimum":1,"maximum":99999},
  "customer":{"type":"string","maxLength":40},
  "items":{"type":"array","items":{"type":"object","properties":{
     "sku":{"type":"string","minLength":3,"maxLength":12},"qty":{"type":"integer","minimum":1,"maximum":20},
     "price":{"type":"number"}},"required":["sku","qty","price"]},"minItems":1,"maxItems":4},
  "shipping":{"enum":["standard","express",null]},"note":{"type":["string","null"]}},
  "required":["id","customer","items","shipping","note"]}},"required":["order"]})";

struct Walk {
  std::vector<int32_t> tokens;
};

// random walks: uniform among the allowed tokens (EOS half the time when
// allowed), as a random model would sample under the mask.
std::vector<Walk> randomWalks(GrammarCache& cache, const std::string& grammar, int n, int32_t eos,
                              double* cold_us_per_token) {
  auto automaton = *cache.get(grammar);
  std::vector<Walk> walks;
  std::mt19937 rng(1);
  int64_t tokens = 0;
  const auto start = Clock::now();
  for (int w = 0; w < n; ++w) {
    TokenMatcher m(automaton);
    Walk walk;
    std::vector<int32_t> allowed;
    for (int step = 0; step < 300 && !m.isTerminated(); ++step) {
      const TokenMask& mask = m.allowedTokens();
      if (mask.test(eos) && rng() % 2 == 0) break;
      allowed.clear();
      for (int32_t id = 0; id < mask.numTokens(); ++id) {
        if (mask.test(id) && id != eos) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      // bias toward short tokens half the time so walks finish their JSON.
      int32_t token = allowed[rng() % allowed.size()];
      m.accept(token);
      walk.tokens.push_back(token);
    }
    tokens += static_cast<int64_t>(walk.tokens.size());
    walks.push_back(std::move(walk));
  }
  // (includes listing the allowed ids, which the engine never does)
  *cold_us_per_token = micros(Clock::now() - start) / std::max<int64_t>(tokens, 1);
  return walks;
}

// the engine's per-token grammar work over recorded walks: mask, apply,
// accept. `budgeted`: each walk's own length is its max_tokens, so the
// budget mask binds over its last tokens (as it does when a request's
// output runs to max_tokens); `tight` counts the steps where it removed
// tokens from the state's mask.
double maskedStepMicros(GrammarCache& cache, const std::string& grammar,
                        const std::vector<Walk>& walks, int vocab_rows, std::vector<float>& logits,
                        bool budgeted, double* tight = nullptr, double* tight_us = nullptr) {
  auto automaton = *cache.get(grammar);
  int64_t tokens = 0;
  int64_t narrowed = 0;
  Clock::duration total{};
  Clock::duration narrowed_total{};
  std::vector<float> work(vocab_rows);
  for (const Walk& walk : walks) {
    TokenMatcher m(automaton);
    const auto n = static_cast<int64_t>(walk.tokens.size());
    for (int64_t i = 0; i < n; ++i) {
      std::copy(logits.begin(), logits.end(), work.begin());  // the sampler copies anyway
      const int64_t left = budgeted ? n - i : tandem::grammar::GrammarAutomaton::kUnlimited;
      auto t0 = Clock::now();
      const TokenMask& mask = m.allowedTokens(left);
      tandem::engine::Sampler::applyMask(work, mask);
      Clock::duration step = Clock::now() - t0;
      // (untimed) the state's own mask is another object when the budget
      // narrowed it.
      const bool was_narrowed = budgeted && &mask != &m.allowedTokens();
      t0 = Clock::now();
      m.accept(walk.tokens[i]);
      step += Clock::now() - t0;
      total += step;
      if (was_narrowed) {
        ++narrowed;
        narrowed_total += step;
      }
      ++tokens;
    }
  }
  if (tight != nullptr) *tight = 100.0 * static_cast<double>(narrowed) / std::max<int64_t>(tokens, 1);
  if (tight_us != nullptr) *tight_us = micros(narrowed_total) / std::max<int64_t>(narrowed, 1);
  return micros(total) / std::max<int64_t>(tokens, 1);
}

// building an automaton: the per-position completion costs (segmentation
// of the literal runs, Knuth's algorithm over the rules) are its work.
double buildMillis(const std::string& grammar, const tandem::grammar::TokenVocabularyPtr& vocab,
                   int repeats) {
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    tandem::grammar::Grammar g = *tandem::grammar::parseGrammar(grammar);
    const auto t0 = Clock::now();
    tandem::grammar::GrammarAutomaton a(std::move(g), vocab);
    ms.push_back(micros(Clock::now() - t0) / 1000);
  }
  return median(ms);
}

double decodeStepMicros(const std::string& model, int threads, int repeats) {
  tandem::engine::EngineAssemblyOptions options;
  options.num_threads = threads;
  options.max_num_seqs = 4;
  options.kv_budget_bytes = 256ull << 20;
  auto assembly = tandem::engine::EngineAssembly::create(model, options);
  if (!assembly.ok()) {
    std::fprintf(stderr, "%s\n", std::string(assembly.status().message()).c_str());
    std::exit(1);
  }
  tandem::engine::Engine& engine = (*assembly)->engine();
  std::vector<double> steps;
  for (int r = 0; r < repeats; ++r) {
    tandem::generation::SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 40;
    p.ignore_eos = true;
    std::vector<int32_t> prompt(16, 5);
    if (!engine.addRequest(r + 1, prompt, p).ok()) std::exit(1);
    engine.step();  // prefill
    for (int i = 0; i < 32 && engine.hasUnfinished(); ++i) {
      const auto t0 = Clock::now();
      engine.step();
      steps.push_back(micros(Clock::now() - t0));
    }
    while (engine.hasUnfinished()) engine.step();
  }
  return median(steps);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s MODEL THREADS REPEATS WALKS TOKENIZER_DIR...\n", argv[0]);
    return 2;
  }
  const std::string model = argv[1];
  const int threads = std::stoi(argv[2]);
  const int repeats = std::stoi(argv[3]);
  const int num_walks = std::stoi(argv[4]);
  const double decode_us = decodeStepMicros(model, threads, repeats);
  std::printf("decode step (batch 1, %d threads): %.0f us\n", threads, decode_us);
  std::printf("%-10s %-12s %7s %6s %13s %14s %10s %8s %9s %15s %7s %13s %9s\n", "vocab",
              "grammar", "tokens", "states", "cold us/tok", "warm us/tok", "min..max", "% step",
              "bytes", "budgeted us/tok", "tight%", "tight us/tok", "build ms");
  for (int i = 5; i < argc; ++i) {
    auto tok = tandem::tokenizer::Tokenizer::fromHfDir(argv[i]);
    if (!tok.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], std::string(tok.status().message()).c_str());
      return 1;
    }
    const int32_t eos = tok.value()->eosId().value_or(0);
    const auto vocab = tandem::grammar::TokenVocabulary::fromTokenizer(**tok, {eos});
    GrammarCache cache(vocab);
    std::vector<float> logits(vocab->size());
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (float& x : logits) x = normal(rng);
    const std::string name = std::string(argv[i]).substr(std::string(argv[i]).find_last_of('/') + 1);
    const std::pair<const char*, std::string> grammars[] = {
        {"json_schema", *tandem::grammar::compileJsonSchema(nlohmann::ordered_json::parse(kSchema))},
        {"json_object", tandem::grammar::jsonObjectGrammar()},
    };
    for (const auto& [label, grammar] : grammars) {
      double cold = 0;
      const std::vector<Walk> walks = randomWalks(cache, grammar, num_walks, eos, &cold);
      int64_t tokens = 0;
      for (const Walk& w : walks) tokens += static_cast<int64_t>(w.tokens.size());
      std::vector<double> warm;
      std::vector<double> budgeted;
      std::vector<double> narrowed;
      double tight = 0;
      for (int r = 0; r < repeats; ++r) {
        warm.push_back(maskedStepMicros(cache, grammar, walks, vocab->size(), logits, false));
        double tight_us = 0;
        budgeted.push_back(maskedStepMicros(cache, grammar, walks, vocab->size(), logits, true,
                                            &tight, &tight_us));
        narrowed.push_back(tight_us);
      }
      const auto stats = (*cache.get(grammar))->stats();
      std::printf("%-10s %-12s %7lld %6lld %13.1f %14.2f %5.2f..%-5.2f %7.3f%% %8.1fM %15.2f %6.1f%% %13.2f %9.2f\n",
                  name.c_str(), label, static_cast<long long>(tokens),
                  static_cast<long long>(stats.states), cold, median(warm),
                  *std::min_element(warm.begin(), warm.end()),
                  *std::max_element(warm.begin(), warm.end()), 100.0 * median(warm) / decode_us,
                  static_cast<double>(stats.bytes) / (1 << 20), median(budgeted), tight,
                  median(narrowed), buildMillis(grammar, vocab, repeats));
    }
  }
  return 0;
}
