// tandem_gpu_check: the hip backend on the GPU at hand, in a build that needs
// no gRPC, protobuf, ICU or other system packages (bench/gpu/CMakeLists.txt;
// bench/gpu/run_on_device.sh runs it on a lent GPU machine).
//
//   tandem_gpu_check info
//   tandem_gpu_check parity [--large]
//   tandem_gpu_check oracle [--model GGUF] [--oracle JSON] [--prompts N] [--tokens N]
//                           [--tie-gap 0.05] [--graphs]
//   tandem_gpu_check bench  [--repeats N] [--small] [--peak-tflops X] [--sections a,b]
//   tandem_gpu_check e2e    --model PATH [--prompts 512,2048] [--batches 1,16,64]
//                           [--decode-steps 64] [--repeats 3] [--kv-dtype f16|bf16|f32]
// common: [--device N] [--out FILE] (the JSON report; stdout always has it)
//
// Exit status: 0 when every check passes (bench: when it ran), 1 when one
// fails, 2 for bad arguments, 3 when there is no device.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/gpu/device_probe.h"
#include "bench/gpu/e2e_bench.h"
#include "bench/gpu/kernel_bench.h"
#include "bench/gpu/oracle_check.h"
#include "bench/gpu/parity_check.h"
#include "kernels/hip/hip_backend.h"
#include "nlohmann/json.hpp"

#ifndef TANDEM_GPU_CHECK_SOURCE_DIR
#define TANDEM_GPU_CHECK_SOURCE_DIR "."
#endif

namespace tandem::bench::gpu {
namespace {

struct Args {
  std::string command;
  int device = 0;
  std::string out;
  bool large = false;
  bool small = false;
  int repeats = 7;
  double peak_tflops = 0;
  std::string sections;
  E2eOptions e2e;
  OracleOptions oracle{
      .model_path = TANDEM_GPU_CHECK_SOURCE_DIR "/models/stories260K/gguf/stories260K.gguf",
      .oracle_path = TANDEM_GPU_CHECK_SOURCE_DIR "/models/stories260K/greedy_oracle.json"};
};

int usage(const std::string& why) {
  std::cerr << "tandem_gpu_check: " << why
            << "\nusage: tandem_gpu_check info|parity|oracle|bench|e2e [--device N] [--out FILE]"
               " [--large] [--model GGUF] [--oracle JSON] [--prompts N] [--tokens N] [--tie-gap G] [--graphs]"
               " [--repeats N] [--small] [--peak-tflops X] [--sections a,b]"
               " [--prompts 512,2048] [--batches 1,16] [--decode-steps N] [--kv-dtype f16]\n";
  return 2;
}

// "512,2048" as positive integers.
bool parseList(const std::string& text, std::vector<int>* out) {
  out->clear();
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) return false;
    out->push_back(v);
  }
  return !out->empty();
}

bool parse(int argc, char** argv, Args* a, std::string* error) {
  if (argc < 2) {
    *error = "no command";
    return false;
  }
  a->command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    try {
      if (flag == "--large") {
        a->large = true;
      } else if (flag == "--small") {
        a->small = true;
      } else if (flag == "--device" && value(&v)) {
        a->device = std::stoi(v);
      } else if (flag == "--out" && value(&v)) {
        a->out = v;
      } else if (flag == "--model" && value(&v)) {
        a->oracle.model_path = v;
        a->e2e.model = v;
      } else if (flag == "--tie-gap" && value(&v)) {
        a->oracle.tie_gap = std::stod(v);
      } else if (flag == "--graphs") {
        a->oracle.graphs = true;
      } else if (flag == "--sections" && value(&v)) {
        a->sections = v;
      } else if (flag == "--batches" && value(&v)) {
        if (!parseList(v, &a->e2e.batches)) throw std::invalid_argument(v);
      } else if (flag == "--decode-steps" && value(&v)) {
        a->e2e.decode_steps = std::stoi(v);
      } else if (flag == "--kv-dtype" && value(&v)) {
        if (v == "f16") a->e2e.kv_dtype = DType::kF16;
        else if (v == "bf16") a->e2e.kv_dtype = DType::kBF16;
        else if (v == "f32") a->e2e.kv_dtype = DType::kF32;
        else throw std::invalid_argument(v);
      } else if (flag == "--oracle" && value(&v)) {
        a->oracle.oracle_path = v;
      } else if (flag == "--prompts" && value(&v)) {
        // the oracle's prompt count, or e2e's prompt lengths
        if (a->command == "e2e") {
          if (!parseList(v, &a->e2e.prompts)) throw std::invalid_argument(v);
        } else {
          a->oracle.prompts = std::stoi(v);
        }
      } else if (flag == "--tokens" && value(&v)) {
        a->oracle.tokens = std::stoi(v);
      } else if (flag == "--repeats" && value(&v)) {
        a->repeats = std::stoi(v);
      } else if (flag == "--peak-tflops" && value(&v)) {
        a->peak_tflops = std::stod(v);
      } else {
        *error = "bad argument " + flag;
        return false;
      }
    } catch (const std::exception&) {
      *error = "bad value for " + flag;
      return false;
    }
  }
  return true;
}

int run(const Args& a) {
  nlohmann::json report;
  report["command"] = a.command;
  auto info = deviceInfo(a.device);
  if (!info.ok()) {
    std::cerr << "tandem_gpu_check: " << info.status() << "\n";
    return 3;
  }
  report["device"] = {{"name", info->name},
                      {"vendor", info->vendor},
                      {"index", a.device},
                      {"memory_bytes", info->total_bytes},
                      {"multiprocessors", info->multiprocessors},
                      {"warp_size", info->warp_size}};
  auto backend = kernels::hip::HipBackend::create(a.device);
  if (!backend.ok()) {
    std::cerr << "tandem_gpu_check: " << backend.status() << "\n";
    return 3;
  }
  report["gemm_path"] = (*backend)->gemmPath();
  bool ok = true;
  if (a.command == "info") {
    // the device alone
  } else if (a.command == "e2e") {
    if (a.e2e.model.empty()) return usage("e2e needs --model");
    E2eOptions o = a.e2e;
    o.repeats = a.repeats;
    o.device_name = info->name;
    o.small = a.small;
    auto e2e = runE2e(**backend, o);
    if (!e2e.ok()) {
      std::cerr << "tandem_gpu_check: e2e: " << e2e.status() << "\n";
      return 1;
    }
    report["e2e"] = *e2e;
  } else if (a.command == "parity") {
    int failed = 0;
    for (const ParityResult& r : runParity(**backend, a.large)) {
      report["cases"].push_back({{"name", r.name},
                                 {"max_rel_error", r.max_rel_error},
                                 {"tolerance", r.tolerance},
                                 {"error", r.error},
                                 {"pass", r.pass()}});
      if (!r.pass()) {
        ++failed;
        std::cerr << "FAIL " << r.name << ": max rel error " << r.max_rel_error << " > "
                  << r.tolerance << " " << r.error << "\n";
      }
    }
    report["failed"] = failed;
    report["total"] = report["cases"].size();
    ok = failed == 0;
  } else if (a.command == "oracle") {
    auto results = runOracle(**backend, a.oracle);
    if (!results.ok()) {
      std::cerr << "tandem_gpu_check: oracle: " << results.status() << "\n";
      return 1;
    }
    int exact = 0;
    for (const OracleResult& r : *results) {
      report["prompts"].push_back(
          {{"index", r.prompt_index}, {"exact", r.exact()}, {"want", r.want}, {"got", r.got}});
      report["tie_gap"] = r.tie_gap;
      report["graphs"] = a.oracle.graphs;
      exact += r.exact();
    }
    report["exact"] = exact;
    report["total"] = results->size();
    ok = exact == static_cast<int>(results->size());
  } else if (a.command == "bench") {
    auto bench = runBench(**backend, {.repeats = a.repeats,
                                      .small = a.small,
                                      .peak_tflops = a.peak_tflops,
                                      .device_name = info->name,
                                      .sections = a.sections});
    if (!bench.ok()) {
      std::cerr << "tandem_gpu_check: bench: " << bench.status() << "\n";
      return 1;
    }
    report["bench"] = *bench;
    report["repeats"] = a.repeats;
  } else {
    return usage("unknown command " + a.command);
  }
  report["pass"] = ok;
  const std::string text = report.dump(1);
  std::cout << text << "\n";
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    f << text << "\n";
    if (!f) {
      std::cerr << "tandem_gpu_check: cannot write " << a.out << "\n";
      return 1;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tandem::bench::gpu

int main(int argc, char** argv) {
  tandem::bench::gpu::Args args;
  std::string error;
  if (!tandem::bench::gpu::parse(argc, argv, &args, &error)) return tandem::bench::gpu::usage(error);
  return tandem::bench::gpu::run(args);
}
