// The one place a compute backend is chosen: `--backend cpu|hip` and
// `--device N` of every command that runs an engine end here.
//
// The hip backend is compiled in only when the build has one (-DTANDEM_HIP=ON
// with hipcc for AMD GPUs, -DTANDEM_CUDA=ON with nvcc for NVIDIA: the same
// kernel sources either way); otherwise asking for it is one clear error.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace tandem::kernels {

enum class BackendKind : uint8_t { kCpu, kHip };

struct BackendOptions {
  BackendKind kind = BackendKind::kCpu;
  // the GPU (hip backend only), as the runtime numbers them.
  int device = 0;
  // compute threads of the cpu backend; 0 = one per hardware thread.
  int num_threads = 0;
};

// "cpu" or "hip"; InvalidArgument naming the choices otherwise.
absl::StatusOr<BackendKind> parseBackendKind(std::string_view name);
std::string_view backendKindName(BackendKind kind);

// whether this build has the hip backend, and for which vendor ("rocm",
// "cuda"; "" when not compiled in).
bool hipBackendCompiledIn();
std::string_view hipBackendVendor();

// whether the backend's buffers are host memory (the cpu backend), which
// host code (KV tiers, KV transport) may read and write directly.
bool backendUsesHostMemory(BackendKind kind);

// the backend the options ask for. Errors: FailedPrecondition when the hip
// backend is not compiled in (saying how to rebuild); those of
// hip::HipBackend::create (no device: Unavailable with the runtime's device
// count and message; --device out of range: InvalidArgument); those of
// cpu::CpuBackend::create.
absl::StatusOr<std::unique_ptr<Backend>> createBackend(const BackendOptions& options);

}  // namespace tandem::kernels
