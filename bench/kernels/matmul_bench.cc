// Measures the cpu backend's matmul: GEMV (decode, m = 1) in GB/s of weights
// streamed, and GEMM (prefill) in GFLOP/s, per dtype, simd level and threads.
//
//   matmul_bench [--threads 2] [--simd avx512|avx2|scalar] [--m 512] [--n 2048] [--k 768]
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"

namespace tandem::kernels::cpu {
namespace {

template <class Fn>
double bestSeconds(int reps, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int run(int argc, char** argv) {
  int threads = 2;
  int64_t m = 512, n = 2048, k = 768;
  std::string simd;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--simd") simd = value;
    else if (flag == "--m") m = std::stoll(value);
    else if (flag == "--n") n = std::stoll(value);
    else if (flag == "--k") k = std::stoll(value);
  }
  CpuBackendOptions o;
  o.num_threads = threads;
  if (!simd.empty()) o.simd_level = *parseSimdLevel(simd);
  auto backend = CpuBackend::create(o);
  if (!backend.ok()) return 1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(m * k), y(m * n);
  for (float& v : x) v = dist(rng);
  // a weight set larger than the caches, so gemv streams from memory
  const int64_t copies = std::max<int64_t>(1, (256ll << 20) / (n * k * 4));
  std::vector<float> w32(copies * n * k);
  std::vector<uint16_t> w16(copies * n * k);
  for (size_t i = 0; i < w32.size(); ++i) {
    w32[i] = dist(rng);
    w16[i] = f32ToF16(w32[i]);
  }
  std::printf("threads %d simd %s\n", threads,
              std::string(simdLevelName((*backend)->simdLevel())).c_str());
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const void* base = dt == DType::kF32 ? static_cast<const void*>(w32.data()) : w16.data();
    const size_t wbytes = n * k * dtypeSize(dt);
    int64_t c = 0;
    const double gemv = bestSeconds(5, [&] {
      for (int rep = 0; rep < copies; ++rep, ++c) {
        const Tensor w = Tensor::of(static_cast<const char*>(base) + (c % copies) * wbytes, dt, n, k);
        (*backend)->matmul(Tensor::of(x.data(), DType::kF32, 1, k), w, nullptr,
                           Tensor::of(y.data(), DType::kF32, 1, n));
      }
    });
    const Tensor w = Tensor::of(base, dt, n, k);
    const double gemm = bestSeconds(3, [&] {
      (*backend)->matmul(Tensor::of(x.data(), DType::kF32, m, k), w, nullptr,
                         Tensor::of(y.data(), DType::kF32, m, n));
    });
    std::printf("%-5s gemv [1x%ld]x[%ldx%ld]^T: %7.1f GB/s   gemm [%ldx%ld]x[%ldx%ld]^T: %7.1f GFLOP/s\n",
                std::string(dtypeName(dt)).c_str(), static_cast<long>(k), static_cast<long>(n),
                static_cast<long>(k), copies * wbytes / gemv / 1e9, static_cast<long>(m),
                static_cast<long>(k), static_cast<long>(n), static_cast<long>(k),
                2.0 * m * n * k / gemm / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace tandem::kernels::cpu

int main(int argc, char** argv) { return tandem::kernels::cpu::run(argc, argv); }
