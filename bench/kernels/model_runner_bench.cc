// Measures the model runner on the cpu backend the way llama-bench does, so
// the two can be compared run for run (bench/engine_vs_llamacpp.sh):
//   pp<N>      prefill tok/s of one N-token prompt into an empty cache;
//   tg<N>      decode tok/s at batch 1, N steps from an empty cache;
//   tg<N>x<B>  aggregate decode tok/s of B sequences stepping together.
// Each is repeated --repeats times after one warm-up pass; the median is
// printed on a "RESULT <test> <tok/s>" line for scripts, every run beside it.
//
//   model_runner_bench [--model PATH.gguf | --shape dim=768,...,vocab=32000 --dtype f32|f16|bf16]
//                      [--threads 2] [--repeats 5] [--prompt 512] [--decode 128]
//                      [--batch 16] [--batch-decode 32] [--tests pp,tg,batch]
//                      [--simd avx512|avx2|scalar] [--kv-dtype f32|f16|bf16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "bench/kernels/runner_steps.h"
#include "server/model/synth.h"
#include "server/model/weights.h"

namespace tandem {
namespace {

struct Flags {
  std::string model, shape = "dim=768,layers=12,heads=12,ffn=2048,vocab=32000", dtype = "f32";
  std::string simd, tests = "pp,tg,batch";
  DType kv_dtype = DType::kF32;
  int threads = 2, repeats = 5, prompt = 512, decode = 128, batch = 16, batch_decode = 32;
};

int fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// runs fn() (which returns tokens computed) repeats times; prints every rate
// and the median, and returns the median tok/s.
double measure(const std::string& test, int repeats, const std::function<int()>& fn) {
  std::vector<double> rates;
  std::printf("%-10s runs:", test.c_str());
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const int tokens = fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(tokens / s);
    std::printf(" %.1f", rates.back());
    std::fflush(stdout);
  }
  const double m = median(rates);
  std::printf("\nRESULT %s %.2f\n", test.c_str(), m);
  return m;
}

// the model to bench: the file named by --model, or a synthesized one.
absl::StatusOr<model::ModelWeightsPtr> loadModel(const Flags& f, std::string* synth_path) {
  if (!f.model.empty()) return model::ModelWeights::load(f.model);
  model::SynthOptions o;
  ASSIGN_OR_RETURN(o.shape, model::parseShape(f.shape));
  o.dtype = f.dtype == "f16" ? DType::kF16 : f.dtype == "bf16" ? DType::kBF16 : DType::kF32;
  o.format = model::SynthOptions::Format::kGguf;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tandem-runner-bench";
  std::filesystem::create_directories(dir);
  o.out = (dir / ("model-" + f.dtype + ".gguf")).string();
  RETURN_IF_ERROR(model::writeSynthModel(o));
  *synth_path = o.out;
  return model::ModelWeights::load(o.out);
}

int run(const Flags& f) {
  std::string synth_path;
  auto weights = loadModel(f, &synth_path);
  if (!weights.ok()) return fail(weights.status());
  kernels::cpu::CpuBackendOptions bo;
  bo.num_threads = f.threads;
  if (!f.simd.empty()) {
    auto level = kernels::cpu::parseSimdLevel(f.simd);
    if (!level.ok()) return fail(level.status());
    bo.simd_level = *level;
  }
  auto backend = kernels::cpu::CpuBackend::create(bo);
  if (!backend.ok()) return fail(backend.status());

  auto steps = bench::RunnerSteps::create(**weights, **backend, f.prompt,
                                          std::max(f.decode, f.batch_decode),
                                          std::max(f.batch, 1), f.kv_dtype);
  if (!steps.ok()) return fail(steps.status());
  bool ok = true;
  auto count = [&](absl::StatusOr<int> n) {
    ok = ok && n.ok();
    return n.ok() ? *n : 0;
  };
  auto prefill = [&] { return count((*steps)->prefill(f.prompt)); };
  auto decode = [&](int n, int steps_) { return count((*steps)->decode(n, steps_)); };
  const uint64_t weight_bytes = (*steps)->weightBytesPerStep();
  const int seqs = std::max(f.batch, 1);
  std::printf("model %s threads %d simd %s kv %s weights streamed per token %.1f MB\n",
              f.model.empty() ? (f.shape + " " + f.dtype).c_str() : f.model.c_str(), f.threads,
              std::string(kernels::cpu::simdLevelName((*backend)->simdLevel())).c_str(),
              std::string(dtypeName(f.kv_dtype)).c_str(), weight_bytes / 1e6);
  // warm-up: fault in the mapped weights and grow the step buffers
  prefill();
  decode(seqs, 2);
  // what batch-1 decode steps hand the matmuls, counted by the backend
  // (the cpu backend counts; a mixture's step only its chosen experts),
  // against the active weights computed above and the whole model
  if (const uint64_t before = (*backend)->weightBytesRead(); before > 0) {
    constexpr int kCounted = 8;
    decode(1, kCounted);
    const double counted = static_cast<double>((*backend)->weightBytesRead() - before) / kCounted;
    uint64_t model_bytes = 0;
    for (const auto& [name, t] : (*weights)->tensors()) model_bytes += t.bytes;
    std::printf("decode reads %.1f MB of weights a token (counted), %.2fx the active %.1f MB; "
                "the model holds %.1f MB\n",
                counted / 1e6, counted / static_cast<double>(weight_bytes), weight_bytes / 1e6,
                model_bytes / 1e6);
  }
  const auto wants = [&](const char* t) { return f.tests.find(t) != std::string::npos; };
  if (wants("pp")) measure("pp" + std::to_string(f.prompt), f.repeats, prefill);
  if (wants("tg")) {
    const double r = measure("tg" + std::to_string(f.decode), f.repeats, [&] { return decode(1, f.decode); });
    std::printf("decode batch 1 streams %.2f GB/s of weights\n", r * weight_bytes / 1e9);
  }
  if (wants("batch") && f.batch > 1) {
    measure("tg" + std::to_string(f.batch_decode) + "x" + std::to_string(f.batch), f.repeats,
            [&] { return decode(f.batch, f.batch_decode); });
  }
  if (!synth_path.empty()) std::filesystem::remove(synth_path);
  if (!ok) return fail(absl::InternalError("a forward pass failed"));
  return 0;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  tandem::Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") f.model = value;
    else if (flag == "--shape") f.shape = value;
    else if (flag == "--dtype") f.dtype = value;
    else if (flag == "--simd") f.simd = value;
    else if (flag == "--tests") f.tests = value;
    else if (flag == "--threads") f.threads = std::stoi(value);
    else if (flag == "--repeats") f.repeats = std::stoi(value);
    else if (flag == "--prompt") f.prompt = std::stoi(value);
    else if (flag == "--decode") f.decode = std::stoi(value);
    else if (flag == "--batch") f.batch = std::stoi(value);
    else if (flag == "--batch-decode") f.batch_decode = std::stoi(value);
    else if (flag == "--kv-dtype" && value == "f32") f.kv_dtype = tandem::DType::kF32;
    else if (flag == "--kv-dtype" && value == "f16") f.kv_dtype = tandem::DType::kF16;
    else if (flag == "--kv-dtype" && value == "bf16") f.kv_dtype = tandem::DType::kBF16;
    else if (flag == "--kv-dtype") return tandem::fail(absl::InvalidArgumentError("--kv-dtype " + value + ": f32, f16 or bf16"));
    else return tandem::fail(absl::InvalidArgumentError("unknown flag " + flag));
  }
  return tandem::run(f);
}
