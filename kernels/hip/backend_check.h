// The hip backend's rule for runtime and launch failures: they are kernel
// or driver bugs, so the process aborts with the device's message (shared
// by the backend's source files: hip_backend*.cc).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

inline void check(hipError_t e, const char* what) {
  if (e == hipSuccess) return;
  std::fprintf(stderr, "hip backend: %s failed: %s\n", what, gpu::errorMessage(e).c_str());
  std::abort();
}

}  // namespace tandem::kernels::hip
