// `tandem_gpu_check bench`: the hip backend's kernels on Llama-3-8B shapes,
// each as a fraction of a limit measured or named in the same run.
//  - copy: device-to-device copies (hipMemcpy), bytes read + written per
//    second: the memory bandwidth the device reaches.
//  - gemv (decode, 1 and 8 rows): F16 / BF16 weights of 4096x4096 (q/o
//    projection) and 14336x4096 (gate/up), weight bytes read per second as a
//    fraction of the copy bandwidth.
//  - gemm (prefill, 512 rows): TFLOP/s (2*m*n*k) as a fraction of the
//    device's dense F16/BF16 peak (peakTflops, or --peak-tflops).
//  - attention (decode at 4096 context, 32 query : 8 kv heads of 128, 16-token
//    blocks, F16 / BF16 cache): KV bytes read per second as a fraction of the
//    copy bandwidth.
// Every number is the median of `repeats` timings of `iters` back-to-back
// ops followed by one wait for the device.
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
};

// the dense F16/BF16 tensor peak of a device by its name (vendor data
// sheets, without sparsity), 0 when unknown.
double peakTflops(const std::string& device_name);

absl::StatusOr<nlohmann::json> runBench(kernels::hip::HipBackend& backend,
                                        const BenchOptions& options);

}  // namespace tandem::bench::gpu
