// Measures the model runner on the cpu backend: prefill tokens/s for one
// prompt and decode tokens/s at batch 1 (and a larger decode batch), on a
// synthesized random-weight model of a given shape and dtype.
//
//   model_runner_bench [--shape dim=768,layers=12,heads=12,ffn=2048,vocab=32000]
//                      [--dtype f32|f16|bf16] [--threads 2] [--prompt 512]
//                      [--decode 64] [--batch 8] [--simd avx512|avx2|scalar]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "server/engine/model_runner.h"
#include "server/model/synth.h"
#include "server/model/weights.h"

namespace tandem {
namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

int run(int argc, char** argv) {
  std::string shape_spec = "dim=768,layers=12,heads=12,ffn=2048,vocab=32000";
  std::string dtype_name = "f32", simd;
  int threads = 2, prompt = 512, decode = 64, batch = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--shape") shape_spec = value;
    else if (flag == "--dtype") dtype_name = value;
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--prompt") prompt = std::stoi(value);
    else if (flag == "--decode") decode = std::stoi(value);
    else if (flag == "--batch") batch = std::stoi(value);
    else if (flag == "--simd") simd = value;
    else return fail(absl::InvalidArgumentError("unknown flag " + flag));
  }
  model::SynthOptions o;
  auto shape = model::parseShape(shape_spec);
  if (!shape.ok()) return fail(shape.status());
  o.shape = *shape;
  o.dtype = dtype_name == "f16" ? DType::kF16 : dtype_name == "bf16" ? DType::kBF16 : DType::kF32;
  o.format = model::SynthOptions::Format::kGguf;
  const std::string dir = std::filesystem::temp_directory_path() / "tandem-runner-bench";
  std::filesystem::create_directories(dir);
  o.out = dir + "/model-" + dtype_name + ".gguf";
  if (auto s = model::writeSynthModel(o); !s.ok()) return fail(s);
  auto weights = model::ModelWeights::load(o.out);
  if (!weights.ok()) return fail(weights.status());

  kernels::cpu::CpuBackendOptions bo;
  bo.num_threads = threads;
  if (!simd.empty()) {
    auto level = kernels::cpu::parseSimdLevel(simd);
    if (!level.ok()) return fail(level.status());
    bo.simd_level = *level;
  }
  auto backend = kernels::cpu::CpuBackend::create(bo);
  if (!backend.ok()) return fail(backend.status());
  constexpr int kBlockSize = 16;
  const int blocks_per_seq = (prompt + decode + kBlockSize) / kBlockSize;
  const int seqs = std::max(batch, 1);
  auto runner = engine::ModelRunner::create(**weights, **backend, blocks_per_seq * seqs, kBlockSize);
  if (!runner.ok()) return fail(runner.status());
  auto table = [&](int s) {
    std::vector<int32_t> t(blocks_per_seq);
    for (int b = 0; b < blocks_per_seq; ++b) t[b] = s * blocks_per_seq + b;
    return t;
  };
  const int vocab = (*weights)->config().vocab_size;
  std::vector<int32_t> tokens(prompt);
  for (int i = 0; i < prompt; ++i) tokens[i] = (i * 7919 + 13) % vocab;
  std::vector<float> logits;

  // prefill every sequence (timed on the first), then decode
  double prefill_s = 0.0;
  for (int s = 0; s < seqs; ++s) {
    engine::Batch b{{{static_cast<engine::SeqId>(s), tokens, 0, table(s), true}}};
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = (*runner)->forward(b, &logits); !st.ok()) return fail(st);
    if (s == 0) prefill_s = seconds(t0);
  }
  auto decodeRate = [&](int n_seqs) -> double {
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < decode; ++step) {
      engine::Batch b;
      for (int s = 0; s < n_seqs; ++s) {
        b.seqs.push_back({static_cast<engine::SeqId>(s), {tokens[step % prompt]}, prompt + step,
                          table(s), true});
      }
      if (auto st = (*runner)->forward(b, &logits); !st.ok()) return -1.0;
    }
    return decode * n_seqs / seconds(t0);
  };
  const double decode1 = decodeRate(1);
  const double decodeN = batch > 1 ? decodeRate(batch) : 0.0;
  uint64_t weight_bytes = 0;
  for (const auto& [name, t] : (*weights)->tensors()) {
    if (name != "model.embed_tokens.weight" || (*weights)->config().tie_word_embeddings) weight_bytes += t.bytes;
  }
  std::printf("shape %s dtype %s threads %d simd %s\n", shape_spec.c_str(), dtype_name.c_str(),
              threads, std::string(kernels::cpu::simdLevelName((*backend)->simdLevel())).c_str());
  std::printf("prefill %d tokens: %.3f s, %.1f tok/s\n", prompt, prefill_s, prompt / prefill_s);
  std::printf("decode batch 1 (context %d..%d): %.1f tok/s, %.1f GB/s of weights\n", prompt,
              prompt + decode, decode1, decode1 * weight_bytes / 1e9);
  if (batch > 1) std::printf("decode batch %d: %.1f tok/s\n", batch, decodeN);
  std::filesystem::remove(o.out);
  return 0;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) { return tandem::run(argc, argv); }
