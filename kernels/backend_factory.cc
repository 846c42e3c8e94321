#include "kernels/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#if defined(TANDEM_HAVE_HIP_BACKEND)
#include "kernels/hip/hip_backend.h"
#endif

namespace tandem::kernels {

absl::StatusOr<BackendKind> parseBackendKind(std::string_view name) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "hip") return BackendKind::kHip;
  return absl::InvalidArgumentError(
      absl::StrCat("--backend: '", std::string(name), "' is not a backend (cpu or hip)"));
}

std::string_view backendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kHip: return "hip";
  }
  return "?";
}

bool hipBackendCompiledIn() { return !hipBackendVendor().empty(); }

std::string_view hipBackendVendor() {
#if defined(TANDEM_HAVE_HIP_BACKEND)
  return TANDEM_HIP_BACKEND_VENDOR;
#else
  return "";
#endif
}

bool backendUsesHostMemory(BackendKind kind) { return kind == BackendKind::kCpu; }

absl::StatusOr<std::unique_ptr<Backend>> createBackend(const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::kCpu: {
      cpu::CpuBackendOptions cpu_options;
      cpu_options.num_threads = options.num_threads;
      ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuBackend> backend,
                       cpu::CpuBackend::create(cpu_options));
      return std::unique_ptr<Backend>(std::move(backend));
    }
    case BackendKind::kHip: {
#if defined(TANDEM_HAVE_HIP_BACKEND)
      ASSIGN_OR_RETURN(hip::HipBackendPtr backend, hip::HipBackend::create(options.device));
      return std::unique_ptr<Backend>(std::move(backend));
#else
      return absl::FailedPreconditionError(
          "this tandem was built without the hip backend; rebuild with -DTANDEM_HIP=ON (ROCm) "
          "or -DTANDEM_CUDA=ON (NVIDIA)");
#endif
    }
  }
  return absl::InvalidArgumentError("unknown backend");
}

}  // namespace tandem::kernels
