// One parity suite over every backend (after ggml's test-backend-ops): each
// op's cases are a list of values, and every case runs on every backend
// under test, compared with the reference backend (kernels/reference/).
// A test is instantiated over Combine(backendsUnderTest(), cases), so each
// (backend, case) pair is its own gtest test, named
// `<backend>_<case>` (e.g. `hip_wave32_f16_3x130x65_bias`).
//
// The backends under test: the cpu backend at every simd level this
// machine has with 1 and 2 threads, and the hip kernels on the host
// emulator at wave sizes 64 (CDNA) and 32 (RDNA, NVIDIA). Each carries its
// own tolerances: relative to max(1, |reference|), for the ops whose
// device math differs from the reference's (which sums in double).
// Conversions, copies and adds are exact on every backend.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "kernels/reference/reference_backend.h"
#include "tests/kernels/parity_tensors.h"

namespace tandem::kernels {
namespace {  // the parity tests' own unnamed namespace, where gtest finds it

// gtest prints a case (in test listings and failures) by its name.
template <typename Case>
  requires requires(const Case& c) { c.name(); }
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name();
}

}  // namespace

struct Tolerances {
  float norm = 0;       // rmsNorm
  float matmul = 0;     // matmul (dot products of up to 768 terms)
  float rope = 0;       // rope
  float silu = 0;       // siluMul
  float attention = 0;  // pagedAttention
  // pagedAttention on 16-bit operands (rounds_attention_operands), against
  // the reference rounding alike: a probability a rounding step apart moves
  // the result by about that step times a value
  float attention_f16 = 0;
  float attention_bf16 = 0;
};

struct BackendUnderTest {
  std::string name;
  Tolerances tol;
  // matmuls of more than 8 rows run on a vendor BLAS's 16-bit operands: x
  // is rounded to F16/BF16 weights' own type (to F16 beside quantized
  // weights, which are dequantized to F16): the reference rounds alike.
  bool rounds_gemm_operands = false;
  // prefill attention (a batch with a query of more than one row) on F16 or
  // BF16 caches with head_dim a multiple of 16 runs on 16-bit operands:
  // q * scale and the probabilities rounded to the cache's type
  // (ReferenceBackend::roundAttentionOperandsTo).
  bool rounds_attention_operands = false;
  // a fresh backend (for the emulator this sets its wave size first).
  std::function<absl::StatusOr<std::unique_ptr<Backend>>()> create;
  // waits for the backend and returns the first kernel error, if any.
  std::function<absl::Status(Backend&)> finish;
  // host memory of `bytes` that block gathers and scatters of this backend
  // may use as staging (pinned on a gpu).
  std::function<absl::StatusOr<BufferPtr>(Backend&, size_t bytes)> allocateStaging;
};

inline void PrintTo(const BackendUnderTest& b, std::ostream* os) { *os << b.name; }

// the backends this machine can run (backends_under_test.cc).
const std::vector<BackendUnderTest>& backendsUnderTest();
// those of them that run the hip kernels on the host emulator, for the hip
// backend's own tests (wave 64 and 32).
std::vector<BackendUnderTest> hipOnEmulatorBackends();
// the hip backend on the emulator with its own kernels where the others
// take the vendor BLAS's reference (`hip_wave64_own`, `hip_wave32_own`),
// and decode attention pinned to 64-position partitions: the paths a build
// without a vendor BLAS (Debian's ROCm) and long contexts take. Matmul and
// attention parity run on these too.
std::vector<BackendUnderTest> hipOwnKernelsOnEmulatorBackends();

// a backend under test, started for one test: `backend()` is it, `ref_`
// the reference backend, and ParityTensors' helpers move tensors between
// the host and the backend's device.
class BackendHarness : protected ParityTensors {
 protected:
  void start(const BackendUnderTest& entry);
  void stop();

  const BackendUnderTest& entry() const { return *entry_; }
  const Tolerances& tol() const { return entry_->tol; }
  Backend& backend() { return *backend_; }

  ReferenceBackend ref_;

 private:
  const BackendUnderTest* entry_ = nullptr;
  std::unique_ptr<Backend> backend_;
};

// the fixture of one op's cases, each run on every backend.
template <typename Case>
class BackendParityTest : public ::testing::TestWithParam<std::tuple<BackendUnderTest, Case>>,
                          protected BackendHarness {
 public:
  using CaseType = Case;

 protected:
  void SetUp() override { start(std::get<0>(this->GetParam())); }
  void TearDown() override { stop(); }
  const Case& testCase() const { return std::get<1>(this->GetParam()); }
};

// the fixture of a property every backend must have (no reference needed).
class BackendTest : public ::testing::TestWithParam<BackendUnderTest>, protected BackendHarness {
 protected:
  void SetUp() override { start(GetParam()); }
  void TearDown() override { stop(); }
};

inline std::string backendName(const ::testing::TestParamInfo<BackendUnderTest>& info) {
  return info.param.name;
}

// the test name of a (backend, case) pair: `<backend>_<case.name()>`.
template <typename Case>
std::string parityName(const ::testing::TestParamInfo<std::tuple<BackendUnderTest, Case>>& info) {
  return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name();
}

// instantiates a BackendTest fixture's tests on every backend.
#define TANDEM_ON_EVERY_BACKEND(prefix, fixture) \
  INSTANTIATE_TEST_SUITE_P(prefix, fixture, ::testing::ValuesIn(backendsUnderTest()), backendName)

// instantiates a BackendParityTest fixture's tests over every backend and
// every case of `cases` (a std::vector<Case>).
#define TANDEM_PARITY_CASES(prefix, fixture, cases)                                             \
  INSTANTIATE_TEST_SUITE_P(                                                                     \
      prefix, fixture,                                                                          \
      ::testing::Combine(::testing::ValuesIn(backendsUnderTest()), ::testing::ValuesIn(cases)), \
      parityName<fixture::CaseType>)

}  // namespace tandem::kernels
