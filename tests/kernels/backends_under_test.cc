// The backends of the parity suite and their tolerances.
//
// cpu: 1e-5 for every op. F16 and BF16 weights and caches convert to F32
// exactly, so only the accumulation order differs from the reference.
// hip (host emulator): sums are F32 on the device, so 1e-5 for norms and
// rope, 1e-4 for dot products of up to 768 terms, 2e-5 for attention and
// 1e-6 for silu.
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/emu/runtime.h"
#include "kernels/hip/hip_backend.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

constexpr Tolerances kCpuTolerances{
    .norm = 1e-5f, .matmul = 1e-5f, .rope = 1e-5f, .silu = 1e-5f, .attention = 1e-5f};
constexpr Tolerances kHipTolerances{.norm = 1e-5f,
                                    .matmul = 1e-4f,
                                    .rope = 1e-5f,
                                    .silu = 1e-6f,
                                    .attention = 2e-5f,
                                    .attention_f16 = 2e-3f,
                                    .attention_bf16 = 1.6e-2f};

BackendUnderTest cpuBackend(cpu::SimdLevel level, int threads) {
  BackendUnderTest b;
  b.name =
      "cpu_" + std::string(cpu::simdLevelName(level)) + "_" + std::to_string(threads) + "threads";
  b.tol = kCpuTolerances;
  b.create = [level, threads]() -> absl::StatusOr<std::unique_ptr<Backend>> {
    cpu::CpuBackendOptions options;
    options.simd_level = level;
    options.num_threads = threads;
    auto backend = cpu::CpuBackend::create(options);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<Backend>(std::move(*backend));
  };
  b.finish = [](Backend& backend) {
    backend.synchronize();
    return absl::OkStatus();
  };
  b.allocateStaging = [](Backend& backend, size_t bytes) { return backend.allocate(bytes); };
  return b;
}

BackendUnderTest hipOnEmulator(int wave, bool vendor_blas = true) {
  BackendUnderTest b;
  b.name = "hip_wave" + std::to_string(wave) + (vendor_blas ? "" : "_own");
  b.tol = kHipTolerances;
  b.rounds_gemm_operands = vendor_blas;
  b.rounds_attention_operands = true;
  b.create = [wave, vendor_blas]() -> absl::StatusOr<std::unique_ptr<Backend>> {
    emu::setWarpSize(wave);
    hip::HipBackendOptions options;
    options.vendor_blas = vendor_blas;
    options.decode_partition = vendor_blas ? 0 : 64;
    auto backend = hip::HipBackend::create(0, options);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<Backend>(std::move(*backend));
  };
  b.finish = [](Backend& backend) {
    return static_cast<hip::HipBackend&>(backend).checkedSynchronize();
  };
  b.allocateStaging = [](Backend& backend, size_t bytes) {
    return static_cast<hip::HipBackend&>(backend).allocatePinnedHost(bytes);
  };
  return b;
}

std::vector<BackendUnderTest> makeBackends() {
  std::vector<BackendUnderTest> out;
  for (cpu::SimdLevel level :
       {cpu::SimdLevel::kScalar, cpu::SimdLevel::kAvx2, cpu::SimdLevel::kAvx512}) {
    if (level > cpu::detectSimdLevel()) continue;
    for (int threads : {1, 2}) out.push_back(cpuBackend(level, threads));
  }
  for (int wave : {64, 32}) out.push_back(hipOnEmulator(wave));
  return out;
}

}  // namespace

const std::vector<BackendUnderTest>& backendsUnderTest() {
  static const std::vector<BackendUnderTest> backends = makeBackends();
  return backends;
}

std::vector<BackendUnderTest> hipOnEmulatorBackends() {
  std::vector<BackendUnderTest> out;
  for (const BackendUnderTest& b : backendsUnderTest()) {
    if (b.name.starts_with("hip_")) out.push_back(b);
  }
  return out;
}

std::vector<BackendUnderTest> hipOwnKernelsOnEmulatorBackends() {
  return {hipOnEmulator(64, false), hipOnEmulator(32, false)};
}

}  // namespace tandem::kernels
