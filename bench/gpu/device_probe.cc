#include "bench/gpu/device_probe.h"

#include "absl/strings/str_cat.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::bench::gpu {
namespace {

absl::Status check(hipError_t e, const char* what) {
  if (e == hipSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ::tandem::gpu::errorMessage(e)));
}

}  // namespace

absl::StatusOr<DeviceInfo> deviceInfo(int device) {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess || count == 0) {
    return absl::UnavailableError("no GPU device");
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("device ", device, " of ", count));
  }
  hipDeviceProp_t p{};
  if (absl::Status s = check(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties");
      !s.ok()) {
    return s;
  }
  DeviceInfo info;
  info.name = p.name;
  info.total_bytes = p.totalGlobalMem;
  info.multiprocessors = p.multiProcessorCount;
  info.warp_size = p.warpSize;
#if defined(TANDEM_GPU_NVIDIA)
  info.vendor = "cuda";
#elif defined(TANDEM_GPU_AMD)
  info.vendor = "rocm";
#else
  info.vendor = "emu";
#endif
  return info;
}

absl::Status deviceCopies(void* dst, const void* src, size_t bytes, int reps) {
  for (int i = 0; i < reps; ++i) {
    if (absl::Status s = check(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, nullptr),
                               "hipMemcpyAsync");
        !s.ok()) {
      return s;
    }
  }
  return check(hipDeviceSynchronize(), "hipDeviceSynchronize");
}

absl::Status hostCopies(void* dst, const void* src, size_t bytes, bool to_device, int reps) {
  for (int i = 0; i < reps; ++i) {
    const auto kind = to_device ? hipMemcpyHostToDevice : hipMemcpyDeviceToHost;
    if (absl::Status s = check(hipMemcpyAsync(dst, src, bytes, kind, nullptr), "hipMemcpyAsync");
        !s.ok()) {
      return s;
    }
  }
  return check(hipDeviceSynchronize(), "hipDeviceSynchronize");
}

}  // namespace tandem::bench::gpu
