// `tandem_gpu_check e2e`: whole forward passes of a model on the GPU at hand
// (bench/kernels/runner_steps.h: the model runner as llama-bench drives
// llama.cpp), against the device's limits measured in the same process:
//  - decode: aggregate tok/s of B sequences stepping together, each step
//    replayed from a captured graph and (`_eager`) launched op by op; batch
//    1 as a fraction of the bandwidth roofline (device copy bandwidth /
//    weight bytes streamed a step);
//  - prefill: tok/s of one N-token prompt as a fraction of the compute
//    roofline ((2 * matmul params * N + causal attention 4 * layers * heads
//    * head_dim * N^2 / 2) / the vendor BLAS's own F16 throughput measured
//    here on 2048 x 14336 x 4096, or the data-sheet peak without a BLAS).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/hip/hip_backend.h"
#include "nlohmann/json.hpp"

namespace tandem::bench::gpu {

struct E2eOptions {
  std::string model;                        // a .gguf or HF directory
  std::vector<int> prompts = {512, 2048};   // prefill lengths
  std::vector<int> batches = {1, 16, 64};   // decode batch sizes
  int decode_steps = 64;
  int repeats = 3;
  DType kv_dtype = DType::kF16;
  std::string device_name;                  // for the data-sheet peak
  bool small = false;  // the limits measured on small shapes (the host emulator)
};

absl::StatusOr<nlohmann::json> runE2e(kernels::hip::HipBackend& backend,
                                      const E2eOptions& options);

}  // namespace tandem::bench::gpu
