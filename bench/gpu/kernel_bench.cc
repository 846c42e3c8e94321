#include "bench/gpu/kernel_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "absl/strings/match.h"
#include "bench/gpu/check_tensors.h"
#include "bench/gpu/device_probe.h"

namespace tandem::bench::gpu {
namespace {

using kernels::AttentionBatch;
using kernels::KvCacheView;
using kernels::Tensor;

struct Timing {
  double median_s = 0;  // per op
  std::vector<double> samples_s;
};

// `repeats` timings of `iters` calls of `op` and one wait; per-op seconds.
absl::StatusOr<Timing> timeOps(kernels::hip::HipBackend& backend, int repeats, int iters,
                               const std::function<absl::Status()>& op) {
  // one untimed round: first launches, lazily created workspaces
  for (int i = 0; i < std::min(iters, 2); ++i) {
    if (absl::Status s = op(); !s.ok()) return s;
  }
  if (absl::Status s = backend.checkedSynchronize(); !s.ok()) return s;
  Timing t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (absl::Status s = op(); !s.ok()) return s;
    }
    if (absl::Status s = backend.checkedSynchronize(); !s.ok()) return s;
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    t.samples_s.push_back(d.count() / iters);
  }
  std::vector<double> sorted = t.samples_s;
  std::sort(sorted.begin(), sorted.end());
  t.median_s = sorted[sorted.size() / 2];
  return t;
}

nlohmann::json entry(const std::string& name, const Timing& t, double value,
                     const std::string& unit) {
  return {{"name", name},     {"median_s", t.median_s}, {"samples_s", t.samples_s},
          {"value", value},   {"unit", unit}};
}

}  // namespace

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
  const bool small = options.small;
  const int repeats = std::max(1, options.repeats);
  CheckTensors t(&backend);
  nlohmann::json out;
  const double peak = options.peak_tflops > 0 ? options.peak_tflops
                                              : peakTflops(options.device_name);
  out["peak_tflops_f16_bf16"] = peak;
  out["peak_source"] = options.peak_tflops > 0 ? "--peak-tflops"
                       : peak > 0              ? "vendor data sheet, dense, by device name"
                                               : "unknown device: pass --peak-tflops";

  // copy bandwidth: bytes read + written per second
  const size_t copy_bytes = small ? (size_t{1} << 20) : (size_t{1} << 30);
  auto src = backend.allocate(copy_bytes);
  if (!src.ok()) return src.status();
  auto dst = backend.allocate(copy_bytes);
  if (!dst.ok()) return dst.status();
  backend.synchronize();
  auto copy = timeOps(backend, repeats, small ? 1 : 10, [&] {
    return deviceCopies((*dst)->data(), (*src)->data(), copy_bytes, 1);
  });
  if (!copy.ok()) return copy.status();
  const double copy_bw = 2.0 * copy_bytes / copy->median_s;
  out["copy"] = entry("device_to_device_copy_" + std::to_string(copy_bytes >> 20) + "MiB", *copy,
                      copy_bw / 1e9, "GB/s (read + written)");
  src->reset();
  dst->reset();

  const std::vector<std::pair<int64_t, int64_t>> shapes =
      small ? std::vector<std::pair<int64_t, int64_t>>{{64, 96}, {160, 96}}
            : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {14336, 4096}};
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const std::string dn(dtypeName(dtype));
    for (auto [n, k] : shapes) {
      auto w = t.patterned(dtype, n, k);
      if (!w.ok()) return w.status();
      const std::string shape = std::to_string(n) + "x" + std::to_string(k);
      // decode: gemv, weight bytes per second
      for (int64_t m : {1, 8}) {
        auto x = t.patterned(DType::kF32, m, k);
        auto y = t.patterned(DType::kF32, m, n);
        if (!x.ok() || !y.ok()) return absl::ResourceExhaustedError("gemv operands");
        auto timing = timeOps(backend, repeats, small ? 1 : 50, [&] {
          backend.matmul(*x, *w, nullptr, *y);
          return absl::OkStatus();
        });
        if (!timing.ok()) return timing.status();
        const double bw = static_cast<double>(w->bytes()) / timing->median_s;
        nlohmann::json e = entry("gemv_" + dn + "_" + std::to_string(m) + "x" + shape, *timing,
                                 bw / 1e9, "GB/s (weights read)");
        e["fraction_of_copy_bandwidth"] = bw / copy_bw;
        out["gemv"].push_back(e);
      }
      // prefill: gemm TFLOP/s
      const int64_t m = small ? 70 : 512;
      auto x = t.patterned(DType::kF32, m, k);
      auto y = t.patterned(DType::kF32, m, n);
      if (!x.ok() || !y.ok()) return absl::ResourceExhaustedError("gemm operands");
      auto timing = timeOps(backend, repeats, small ? 1 : 10, [&] {
        backend.matmul(*x, *w, nullptr, *y);
        return absl::OkStatus();
      });
      if (!timing.ok()) return timing.status();
      const double tflops = 2.0 * m * n * k / timing->median_s / 1e12;
      nlohmann::json e =
          entry("gemm_" + dn + "_" + std::to_string(m) + "x" + shape, *timing, tflops, "TFLOP/s");
      e["activations"] = "f32";
      e["fraction_of_peak"] = peak > 0 ? nlohmann::json(tflops / peak) : nlohmann::json(nullptr);
      out["gemm"].push_back(e);
    }
  }

  // paged attention, decode: every sequence one query token at the end of
  // its context
  const int heads = small ? 4 : 32, kv_heads = small ? 2 : 8, head_dim = small ? 32 : 128;
  const int block = 16, context = small ? 64 : 4096;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int seqs : small ? std::vector<int>{2} : std::vector<int>{1, 8, 32}) {
      const kvcache::KvLayout layout{1, kv_heads, head_dim, block, dtype};
      const int blocks_per_seq = context / block;
      const int num_blocks = seqs * blocks_per_seq;
      auto cache = t.patterned(
          dtype, 1, static_cast<int64_t>(layout.blockBytes() * num_blocks / dtypeSize(dtype)));
      if (!cache.ok()) return cache.status();
      const KvCacheView view{cache->data, layout, num_blocks};
      std::vector<int32_t> tables(num_blocks), seq_info;
      std::iota(tables.begin(), tables.end(), 0);
      for (int s = 0; s < seqs; ++s) {
        seq_info.insert(seq_info.end(), {s, 1, context - 1, s * blocks_per_seq});
      }
      AttentionBatch batch;
      batch.num_seqs = seqs;
      batch.max_q_len = 1;
      batch.max_context = context;
      batch.num_heads = heads;
      batch.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      auto info = t.toDevice(t.ints(seq_info).reshaped(seqs, 4));
      auto tab = t.toDevice(t.ints(tables).reshaped(1, num_blocks));
      auto q = t.patterned(DType::kF32, seqs, static_cast<int64_t>(heads) * head_dim);
      auto o = t.patterned(DType::kF32, seqs, static_cast<int64_t>(heads) * head_dim);
      if (!info.ok() || !tab.ok() || !q.ok() || !o.ok()) {
        return absl::ResourceExhaustedError("attention operands");
      }
      batch.seq_info = *info;
      batch.block_tables = *tab;
      auto timing = timeOps(backend, repeats, small ? 1 : 20, [&] {
        backend.pagedAttention(*q, view, 0, batch, *o);
        return absl::OkStatus();
      });
      if (!timing.ok()) return timing.status();
      const double kv_bytes = static_cast<double>(seqs) * context * kv_heads * head_dim * 2 *
                              dtypeSize(dtype);
      const double bw = kv_bytes / timing->median_s;
      nlohmann::json e = entry("attention_decode_" + std::string(dtypeName(dtype)) + "_" +
                                   std::to_string(seqs) + "seqs_ctx" + std::to_string(context),
                               *timing, bw / 1e9, "GB/s (kv read)");
      e["fraction_of_copy_bandwidth"] = bw / copy_bw;
      e["heads"] = heads;
      e["kv_heads"] = kv_heads;
      e["head_dim"] = head_dim;
      out["attention"].push_back(e);
    }
  }
  return out;
}

}  // namespace tandem::bench::gpu
