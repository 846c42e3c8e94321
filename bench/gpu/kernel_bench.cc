#include "bench/gpu/kernel_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "bench/gpu/bench_timing.h"
#include "bench/gpu/check_tensors.h"
#include "bench/gpu/device_probe.h"
#include "common/quant_blocks.h"
#include "common/status.h"

namespace tandem::bench::gpu {
namespace {

using kernels::Tensor;

struct Shape {
  std::string label;  // model and projection
  int64_t n, k;
};

// every decode projection of Llama-3-8B and Llama-3.2-1B (q and o share a
// shape, k and v, gate and up)
std::vector<Shape> decodeShapes(bool small) {
  if (small) return {{"small_a", 64, 256}, {"small_b", 96, 128}};
  return {{"8b_q_o", 4096, 4096},      {"8b_k_v", 1024, 4096},     {"8b_gate_up", 14336, 4096},
          {"8b_down", 4096, 14336},    {"8b_lm_head", 128256, 4096}, {"1b_q_o", 2048, 2048},
          {"1b_k_v", 512, 2048},       {"1b_gate_up", 8192, 2048}, {"1b_down", 2048, 8192},
          {"1b_lm_head", 128256, 2048}};
}

// the 8B's prefill projections (the lm_head runs on the last rows only)
std::vector<Shape> prefillShapes(bool small) {
  if (small) return {{"small_a", 64, 256}};
  return {{"8b_q_o", 4096, 4096},
          {"8b_k_v", 1024, 4096},
          {"8b_gate_up", 14336, 4096},
          {"8b_down", 4096, 14336}};
}

std::string dims(int64_t m, const Shape& s) {
  return std::to_string(m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "_" +
         s.label;
}

// `copies` device weights of one shape (rotated through by the timed calls)
absl::StatusOr<std::vector<Tensor>> weights(CheckTensors& t, DType dtype, const Shape& s,
                                            int copies) {
  std::vector<Tensor> out;
  for (int i = 0; i < copies; ++i) {
    ASSIGN_OR_RETURN(Tensor w, t.patterned(dtype, s.n, s.k));
    out.push_back(w);
  }
  return out;
}

// ours: backend.matmul on F32 x; peer: the vendor BLAS on x of the weight's
// 16-bit type (absent when there is no BLAS).
absl::StatusOr<nlohmann::json> timeMatmul(BenchContext& c, const std::string& name,
                                          const std::vector<Tensor>& w, int64_t m, int iters,
                                          bool with_peer) {
  const Tensor& w0 = w[0];
  // x as the model runner feeds it: F32, or 16-bit where the backend's GEMM
  // wants it so (written by the op before; Backend::gemmInputType)
  ASSIGN_OR_RETURN(Tensor x, c.tensors.patterned(c.backend.gemmInputType(m, w0.dtype), m, w0.cols));
  ASSIGN_OR_RETURN(Tensor y, c.tensors.patterned(DType::kF32, m, w0.rows));
  const int copies = static_cast<int>(w.size());
  ASSIGN_OR_RETURN(Timing ours, timeOps(c.backend, c.repeats, iters, [&](int i) {
                     c.backend.matmul(x, w[i % copies], nullptr, y);
                     return absl::OkStatus();
                   }));
  const double bytes = static_cast<double>(w0.bytes());
  const double flops = 2.0 * m * w0.rows * w0.cols;
  nlohmann::json e = entry(name, ours, bytes / ours.median_s / 1e9, "GB/s (weights read)");
  e["activations"] = std::string(dtypeName(x.dtype));
  e["tflops"] = flops / ours.median_s / 1e12;
  e["fraction_of_copy_bandwidth"] = bytes / ours.median_s / c.copy_bandwidth;
  if (c.peak_tflops > 0) e["fraction_of_peak"] = flops / ours.median_s / 1e12 / c.peak_tflops;
  if (with_peer && !quant::isQuantized(w0.dtype)) {
    ASSIGN_OR_RETURN(Tensor x16, c.tensors.patterned(w0.dtype, m, w0.cols));
    auto peer = timeOps(c.backend, c.repeats, iters,
                        [&](int i) { return c.backend.vendorGemm(x16, w[i % copies], y); });
    if (peer.ok()) {
      e["peer"] = {{"name", c.backend.gemmPath()},
                   {"median_s", peer->median_s},
                   {"timing", peer->graph ? "graph" : "loop"},
                   {"GBps", bytes / peer->median_s / 1e9},
                   {"tflops", flops / peer->median_s / 1e12}};
      e["speed_vs_peer"] = peer->median_s / ours.median_s;
    } else {
      e["peer"] = {{"error", peer.status().ToString()}};
    }
  }
  return e;
}

absl::Status copyBandwidth(BenchContext& c, nlohmann::json* out) {
  const size_t bytes = c.small ? (size_t{1} << 20) : (size_t{1} << 30);
  ASSIGN_OR_RETURN(kernels::BufferPtr src, c.backend.allocate(bytes));
  ASSIGN_OR_RETURN(kernels::BufferPtr dst, c.backend.allocate(bytes));
  c.backend.synchronize();
  // plain copies on the runtime's own stream, each round waited for (no
  // graph: the runtime's copy is the limit the kernels are held to)
  const int reps = c.small ? 1 : 10;
  RETURN_IF_ERROR(deviceCopies(dst->data(), src->data(), bytes, 1));
  Timing copy;
  for (int r = 0; r < c.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(deviceCopies(dst->data(), src->data(), bytes, reps));
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    copy.samples_s.push_back(d.count() / reps);
  }
  std::vector<double> sorted = copy.samples_s;
  std::sort(sorted.begin(), sorted.end());
  copy.median_s = sorted[sorted.size() / 2];
  c.copy_bandwidth = 2.0 * bytes / copy.median_s;
  *out = entry("device_to_device_copy_" + std::to_string(bytes >> 20) + "MiB", copy,
               c.copy_bandwidth / 1e9, "GB/s (read + written)");
  return absl::OkStatus();
}

}  // namespace

absl::Status benchGemv(BenchContext& c, nlohmann::json* out) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (const Shape& s : decodeShapes(c.small)) {
      const Tensor shape{nullptr, dtype, s.n, s.k};
      ASSIGN_OR_RETURN(auto w, weights(c.tensors, dtype, s, c.small ? 1 : rotatingCopies(shape.bytes())));
      for (int64_t m : c.small ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 2, 4, 8}) {
        ASSIGN_OR_RETURN(nlohmann::json e,
                         timeMatmul(c, "gemv_" + std::string(dtypeName(dtype)) + "_" + dims(m, s),
                                    w, m, c.small ? 2 : 40, true));
        out->push_back(e);
      }
      c.tensors.releaseDevice();
    }
  }
  return absl::OkStatus();
}

absl::Status benchGemvQuant(BenchContext& c, nlohmann::json* out) {
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (const Shape& s : prefillShapes(c.small)) {
      const Tensor shape{nullptr, dtype, s.n, s.k};
      ASSIGN_OR_RETURN(auto w, weights(c.tensors, dtype, s, c.small ? 1 : rotatingCopies(shape.bytes())));
      for (int64_t m : c.small ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 2, 4, 8}) {
        ASSIGN_OR_RETURN(nlohmann::json e,
                         timeMatmul(c, "gemv_" + std::string(dtypeName(dtype)) + "_" + dims(m, s),
                                    w, m, c.small ? 2 : 40, false));
        e["unit"] = "GB/s (quantized weights read)";
        out->push_back(e);
      }
      c.tensors.releaseDevice();
    }
  }
  return absl::OkStatus();
}

absl::Status benchGemm(BenchContext& c, nlohmann::json* out) {
  const std::vector<int64_t> rows =
      c.small ? std::vector<int64_t>{70} : std::vector<int64_t>{128, 512, 2048};
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (const Shape& s : prefillShapes(c.small)) {
      ASSIGN_OR_RETURN(auto w, weights(c.tensors, dtype, s, 1));
      for (int64_t m : rows) {
        ASSIGN_OR_RETURN(nlohmann::json e,
                         timeMatmul(c, "gemm_" + std::string(dtypeName(dtype)) + "_" + dims(m, s),
                                    w, m, c.small ? 1 : 10, true));
        out->push_back(e);
      }
      c.tensors.releaseDevice();
    }
  }
  // quantized weights in prefill: dequantized to F16, then the BLAS; the
  // peer is the F16 BLAS on the same shape
  const int64_t m = c.small ? 70 : 512;
  for (DType dtype : {DType::kQ4_K, DType::kQ6_K, DType::kQ8_0}) {
    for (const Shape& s : prefillShapes(c.small)) {
      ASSIGN_OR_RETURN(auto w, weights(c.tensors, dtype, s, 1));
      ASSIGN_OR_RETURN(auto w16, weights(c.tensors, DType::kF16, s, 1));
      ASSIGN_OR_RETURN(nlohmann::json e,
                       timeMatmul(c, "gemm_" + std::string(dtypeName(dtype)) + "_" + dims(m, s), w,
                                  m, c.small ? 1 : 10, false));
      ASSIGN_OR_RETURN(nlohmann::json f16,
                       timeMatmul(c, "f16", w16, m, c.small ? 1 : 10, true));
      if (f16.contains("peer") && f16["peer"].contains("tflops")) {
        e["f16_blas_tflops"] = f16["peer"]["tflops"];
        e["fraction_of_f16_blas"] = e["tflops"].get<double>() / f16["peer"]["tflops"].get<double>();
      }
      out->push_back(e);
      c.tensors.releaseDevice();
    }
  }
  // tandem's own tiled GEMM (the path without a vendor BLAS), once
  auto own = kernels::hip::HipBackend::create(c.backend.device(), {.vendor_blas = false});
  if (own.ok()) {
    CheckTensors t(own->get());
    BenchContext oc{**own, t, c.repeats, c.small, c.copy_bandwidth, c.peak_tflops};
    const Shape s = prefillShapes(c.small)[0];
    ASSIGN_OR_RETURN(auto w, weights(t, DType::kF16, s, 1));
    ASSIGN_OR_RETURN(nlohmann::json e,
                     timeMatmul(oc, "gemm_own_tiled_f16_" + dims(m, s), w, m, c.small ? 1 : 3,
                                false));
    out->push_back(e);
    t.releaseDevice();
  }
  return absl::OkStatus();
}

double peakTflops(const std::string& name) {
  // dense (no sparsity) F16/BF16 tensor throughput at boost clock
  if (absl::StrContains(name, "H100") && absl::StrContains(name, "PCIe")) return 756.0;
  if (absl::StrContains(name, "H100") || absl::StrContains(name, "H200") ||
      absl::StrContains(name, "H800") || absl::StrContains(name, "GH200")) {
    return 989.4;
  }
  if (absl::StrContains(name, "A100")) return 312.0;
  if (absl::StrContains(name, "MI355")) return 2516.6;
  if (absl::StrContains(name, "MI300X") || absl::StrContains(name, "MI325")) return 1307.4;
  if (absl::StrContains(name, "MI250")) return 383.0;
  return 0;
}

absl::StatusOr<nlohmann::json> runBench(kernels::hip::HipBackend& backend,
                                        const BenchOptions& options) {
  CheckTensors t(&backend);
  nlohmann::json out;
  const double peak = options.peak_tflops > 0 ? options.peak_tflops
                                              : peakTflops(options.device_name);
  out["peak_tflops_f16_bf16"] = peak;
  out["peak_source"] = options.peak_tflops > 0 ? "--peak-tflops"
                       : peak > 0              ? "vendor data sheet, dense, by device name"
                                               : "unknown device: pass --peak-tflops";
  out["gemm_path"] = backend.gemmPath();
  BenchContext c{backend, t, std::max(1, options.repeats), options.small, 0, peak};
  RETURN_IF_ERROR(copyBandwidth(c, &out["copy"]));
  const std::vector<std::string> wanted = absl::StrSplit(options.sections, ',', absl::SkipEmpty());
  auto wants = [&](const std::string& s) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), s) != wanted.end();
  };
  if (wants("gemv")) RETURN_IF_ERROR(benchGemv(c, &out["gemv"]));
  if (wants("gemv_quant")) RETURN_IF_ERROR(benchGemvQuant(c, &out["gemv_quant"]));
  if (wants("gemm")) RETURN_IF_ERROR(benchGemm(c, &out["gemm"]));
  if (wants("attention")) RETURN_IF_ERROR(benchAttentionDecode(c, &out["attention"]));
  if (wants("attention_prefill")) {
    RETURN_IF_ERROR(benchAttentionPrefill(c, &out["attention_prefill"]));
  }
  if (wants("staging")) RETURN_IF_ERROR(benchStaging(c, &out["staging"]));
  return out;
}

}  // namespace tandem::bench::gpu
