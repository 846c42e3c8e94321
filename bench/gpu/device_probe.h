// What the GPU check asks of the GPU runtime itself, outside the Backend
// interface: the device's name and size, and device-to-device copies (the
// bandwidth every benchmark of bench/gpu is a fraction of). Compiled by the
// same compiler as the kernels (nvcc, hipcc, or the C++ compiler against the
// host emulator) through kernels/hip/gpu_vendor.h.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::bench::gpu {

struct DeviceInfo {
  std::string name;           // e.g. "NVIDIA H100 80GB HBM3"; "tandem host emulator"
  std::string vendor;         // "cuda", "rocm" or "emu"
  size_t total_bytes = 0;
  int multiprocessors = 0;
  int warp_size = 0;
};

absl::StatusOr<DeviceInfo> deviceInfo(int device);

// `reps` device-to-device copies of `bytes` from `src` to `dst` (device
// memory) on the default stream, then waits for the device.
absl::Status deviceCopies(void* dst, const void* src, size_t bytes, int reps);

// `reps` copies of `bytes` between pinned host memory and the device
// (host -> device when `to_device`), then waits for the device: the limit a
// KV transfer's staging is held to.
absl::Status hostCopies(void* dst, const void* src, size_t bytes, bool to_device, int reps);

}  // namespace tandem::bench::gpu
