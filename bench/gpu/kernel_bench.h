// `tandem_gpu_check bench`: the hip backend's kernels on Llama-3-8B and
// Llama-3.2-1B shapes, each beside a limit measured or named in the same
// run and, where the vendor has one, the vendor library's own number from
// the same binary (bench_timing.h says how each is timed).
//  - copy: device-to-device copies, bytes read + written per second: the
//    memory bandwidth the device reaches; every decode number is a
//    fraction of it.
//  - gemv (decode, m = 1, 2, 4, 8): F16 / BF16 weights of every projection
//    of both models (q, k/v, o, gate/up, down, lm_head), weight bytes read
//    per second, beside the vendor BLAS on 16-bit x (HipBackend::vendorGemm,
//    what torch.matmul calls).
//  - gemv_quant: q8_0, q4_0, q4_k, q6_k weights of the 8B's projections,
//    quantized bytes read per second.
//  - gemm (prefill, m = 128, 512, 2048): the 8B's projections, TFLOP/s of
//    the whole matmul (x converted to 16 bits + the vendor BLAS) beside the
//    vendor BLAS alone, and as a fraction of the dense F16/BF16 peak; q4_k,
//    q6_k and q8_0 weights at m = 512 (dequantized + BLAS); tandem's own
//    tiled GEMM once, for scale.
//  - attention (decode, 32 query : 8 kv heads of 128, F16 / BF16 cache of
//    16-token blocks, shuffled as a serving cache's are): 1/8/32/64
//    sequences x 1k/4k/32k context, KV bytes per second, beside the same
//    kernel on a contiguous cache (one block a sequence).
//  - attention_prefill (causal, one sequence of 1k/4k/16k tokens, F16
//    cache): TFLOP/s (4 * heads * d * T^2 / 2), for the prefill issue.
//  - staging: a 4k-token prompt's KV gathered into pinned host memory and
//    scattered back, beside plain pinned copies (staging_bench.cc).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kernels/hip/hip_backend.h"
#include "nlohmann/json.hpp"

namespace tandem::bench::gpu {

struct BenchOptions {
  int repeats = 7;
  bool small = false;         // tiny shapes (the host emulator, smoke runs)
  double peak_tflops = 0;     // > 0 overrides peakTflops(device name)
  std::string device_name;
  // comma-separated sections to run (copy always runs): gemv, gemv_quant,
  // gemm, attention, attention_prefill, staging; empty: all
  std::string sections;
};

// the dense F16/BF16 tensor peak of a device by its name (vendor data
// sheets, without sparsity), 0 when unknown.
double peakTflops(const std::string& device_name);

absl::StatusOr<nlohmann::json> runBench(kernels::hip::HipBackend& backend,
                                        const BenchOptions& options);

// --- the sections (kernel_bench.cc, attention_bench.cc) ---

class CheckTensors;

struct BenchContext {
  kernels::hip::HipBackend& backend;
  CheckTensors& tensors;
  int repeats;
  bool small;
  double copy_bandwidth;  // bytes/s, read + written
  double peak_tflops;     // 0: unknown
};

absl::Status benchGemv(BenchContext& c, nlohmann::json* out);
absl::Status benchGemvQuant(BenchContext& c, nlohmann::json* out);
absl::Status benchGemm(BenchContext& c, nlohmann::json* out);
absl::Status benchAttentionDecode(BenchContext& c, nlohmann::json* out);
absl::Status benchAttentionPrefill(BenchContext& c, nlohmann::json* out);
absl::Status benchStaging(BenchContext& c, nlohmann::json* out);

}  // namespace tandem::bench::gpu
