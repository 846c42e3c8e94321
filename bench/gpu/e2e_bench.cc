#include "bench/gpu/e2e_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "bench/gpu/bench_timing.h"
#include "bench/gpu/check_tensors.h"
#include "bench/gpu/device_probe.h"
#include "bench/gpu/kernel_bench.h"
#include "bench/kernels/runner_steps.h"
#include "common/status.h"
#include "server/model/weights.h"

namespace tandem::bench::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// median tok/s of `repeats` runs of fn (which returns tokens computed),
// each ended by a wait for the device.
absl::StatusOr<nlohmann::json> rate(kernels::hip::HipBackend& backend, int repeats,
                                    const std::function<absl::StatusOr<int>()>& fn) {
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    ASSIGN_OR_RETURN(const int tokens, fn());
    RETURN_IF_ERROR(backend.checkedSynchronize());
    rates.push_back(tokens / std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  return nlohmann::json{{"tok_s", sorted[sorted.size() / 2]}, {"runs_tok_s", rates}};
}

// bytes/s of device copies (read + written), 1 GiB five times.
absl::StatusOr<double> copyBandwidth(kernels::hip::HipBackend& backend, bool small) {
  const size_t kBytes = small ? size_t{1} << 20 : size_t{1} << 30;
  ASSIGN_OR_RETURN(kernels::BufferPtr a, backend.allocate(kBytes));
  ASSIGN_OR_RETURN(kernels::BufferPtr b, backend.allocate(kBytes));
  RETURN_IF_ERROR(deviceCopies(b->data(), a->data(), kBytes, 1));
  const auto start = Clock::now();
  RETURN_IF_ERROR(deviceCopies(b->data(), a->data(), kBytes, 5));
  return 2.0 * kBytes * 5 / std::chrono::duration<double>(Clock::now() - start).count();
}

// the vendor BLAS's F16 TFLOP/s on 2048 x 14336 x 4096 (0 without one).
absl::StatusOr<double> blasTflops(kernels::hip::HipBackend& backend, bool small) {
  CheckTensors t(&backend);
  const int64_t m = small ? 16 : 2048, n = small ? 64 : 14336, k = small ? 64 : 4096;
  ASSIGN_OR_RETURN(kernels::Tensor x, t.patterned(DType::kF16, m, k));
  ASSIGN_OR_RETURN(kernels::Tensor w, t.patterned(DType::kF16, n, k));
  ASSIGN_OR_RETURN(kernels::Tensor y, t.patterned(DType::kF32, m, n));
  auto timing = timeOps(backend, 5, 10, [&](int) { return backend.vendorGemm(x, w, y); });
  if (!timing.ok()) return 0.0;
  return 2.0 * m * n * k / timing->median_s / 1e12;
}

}  // namespace

absl::StatusOr<nlohmann::json> runE2e(kernels::hip::HipBackend& backend,
                                      const E2eOptions& o) {
  nlohmann::json out;
  ASSIGN_OR_RETURN(const double copy_bw, copyBandwidth(backend, o.small));
  ASSIGN_OR_RETURN(double peak, blasTflops(backend, o.small));
  out["copy_GBps"] = copy_bw / 1e9;
  out["gemm_path"] = backend.gemmPath();
  out["compute_peak_source"] = peak > 0 ? "vendor BLAS, F16 GEMM, this run"
                                        : "data sheet (no vendor BLAS)";
  if (peak <= 0) peak = peakTflops(o.device_name);
  out["compute_peak_tflops"] = peak;

  const auto load_start = Clock::now();
  ASSIGN_OR_RETURN(model::ModelWeightsPtr weights, model::ModelWeights::load(o.model));
  const int max_prompt = *std::max_element(o.prompts.begin(), o.prompts.end());
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  ASSIGN_OR_RETURN(auto steps, RunnerSteps::create(*weights, backend, max_prompt, o.decode_steps,
                                                   max_batch, o.kv_dtype));
  RETURN_IF_ERROR(backend.checkedSynchronize());
  out["model"] = o.model;
  out["load_s"] = std::chrono::duration<double>(Clock::now() - load_start).count();
  const model::ModelConfig& c = steps->config();
  const double weight_bytes = static_cast<double>(steps->weightBytesPerStep());
  out["weight_bytes_per_step"] = weight_bytes;
  out["matmul_params"] = steps->matmulParams();
  out["kv_dtype"] = std::string(dtypeName(o.kv_dtype));
  // warm-up: first launches, workspaces, the BLAS's plans
  RETURN_IF_ERROR(steps->prefill(std::min(max_prompt, 128)).status());
  RETURN_IF_ERROR(steps->decode(max_batch, 2).status());
  RETURN_IF_ERROR(backend.checkedSynchronize());

  for (int n : o.prompts) {
    RETURN_IF_ERROR(steps->prefill(n).status());  // this length's plans
    ASSIGN_OR_RETURN(nlohmann::json r, rate(backend, o.repeats, [&] { return steps->prefill(n); }));
    const double attention = 4.0 * c.num_layers * c.num_heads * c.head_dim *
                             static_cast<double>(n) * n / 2;
    const double flops = 2.0 * steps->matmulParams() * n + attention;
    const double tflops = flops * r["tok_s"].get<double>() / n / 1e12;
    r["tflops"] = tflops;
    r["fraction_of_compute_roofline"] = peak > 0 ? tflops / peak : 0.0;
    out["prefill"]["pp" + std::to_string(n)] = r;
  }
  // decode with the step replayed from graphs, then launched op by op
  for (const bool graphs : {true, false}) {
    steps->enableStepGraphs(graphs);
    double batch1 = 0;
    for (int b : o.batches) {
      RETURN_IF_ERROR(steps->decode(b, 2).status());  // this shape's graphs
      const int64_t replays = steps->graphReplays();
      ASSIGN_OR_RETURN(nlohmann::json r, rate(backend, o.repeats, [&] {
                         return steps->decode(b, o.decode_steps);
                       }));
      r["graph_replays"] = steps->graphReplays() - replays;
      const double tok_s = r["tok_s"].get<double>();
      if (b == 1) {
        batch1 = tok_s;
        r["roofline_tok_s"] = copy_bw / weight_bytes;
        r["fraction_of_bandwidth_roofline"] = tok_s * weight_bytes / copy_bw;
      } else if (batch1 > 0) {
        r["aggregate_vs_batch1"] = tok_s / batch1;
      }
      out["decode"]["tg" + std::to_string(o.decode_steps) + "x" + std::to_string(b) +
                    (graphs ? "" : "_eager")] = r;
    }
  }
  return out;
}

}  // namespace tandem::bench::gpu
