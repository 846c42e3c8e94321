// The vendor's GEMM on the matrix cores: cuBLASLt on NVIDIA, hipBLASLt on
// AMD (ROCm >= 6), named in gpu_vendor.h and loaded at run time (dlopen), so
// a binary built with it runs on a machine without it, on tandem's own tiled
// GEMM. On the host emulator the same call runs a reference GEMM with the
// same contract (F32 sums of the given operands), so CI covers every path
// that reaches it.
//
// Which build uses what (README "GPU builds"): -DTANDEM_CUDA=ON -> cuBLASLt
// (CUDA 12 or 13's libcublasLt.so); -DTANDEM_HIP=ON against a ROCm with
// hipBLASLt -> hipBLASLt; Debian's ROCm 5.2 (no hipBLASLt) -> none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// the operand type of both inputs; sums and the output are F32.
enum class BlasOperand { kF32, kF16, kBF16 };

class VendorBlas;
using VendorBlasPtr = std::unique_ptr<VendorBlas>;

class VendorBlas {
 public:
  // the library on the calling thread's current device, or null with the
  // reason in *why: not built with one, not installed (the names tried),
  // TANDEM_VENDOR_BLAS=off in the environment, or its handle or workspace
  // could not be had.
  static VendorBlasPtr open(std::string* why);
  ~VendorBlas();

  // y [m, n] = a [m, k] * b [n, k]^T, all row-major and dense, a and b of
  // `type`, y F32, queued on `stream`. The algorithm is chosen once per
  // shape (the library's heuristic) and cached. hipErrorInvalidValue when
  // the library has no algorithm for it.
  hipError_t gemm(BlasOperand type, const void* a, const void* b, float* y, int64_t m, int64_t n,
                  int64_t k, hipStream_t stream);

  // "cuBLASLt (libcublasLt.so.13)", "hipBLASLt (...)", "emulator reference".
  const std::string& name() const { return name_; }

 private:
  struct Library;
  VendorBlas(std::unique_ptr<Library> lib, std::string name);

  std::unique_ptr<Library> lib_;
  std::string name_;
};

}  // namespace tandem::kernels::hip
