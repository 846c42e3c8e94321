// Measures the machine's memory read bandwidth (a STREAM-like sum over a
// buffer far larger than the last-level cache): the roof batch-1 decode,
// which reads every weight once per token and writes almost nothing, is
// compared against. Usage:
//   g++ -O2 -mavx2 -pthread bench/read_bandwidth.cc -o /tmp/read_bw
//   /tmp/read_bw [MiB (default 1024)] [threads (default 2)] [repeats (default 9)]
// Prints the median GB/s of bytes read.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// sums n floats with four independent accumulators (8 loads in flight).
float sumRange(const float* p, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(p + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(p + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(p + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(p + i + 24));
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  float s = 0;
  for (float v : out) s += v;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 9;
  const size_t floats = (mib << 20) / sizeof(float);
  std::vector<float> buf(floats, 1.0f);  // touches every page first
  std::vector<double> gbps;
  float sink = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<float> sums(threads);
    const size_t part = floats / threads / 32 * 32;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { sums[t] = sumRange(buf.data() + t * part, part); });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : sums) sink += v;
    gbps.push_back(static_cast<double>(part * threads * sizeof(float)) / s / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("read bandwidth: median %.2f GB/s, min %.2f, max %.2f; %zu MiB, %d threads, %d repeats (sum %g)\n",
              gbps[gbps.size() / 2], gbps.front(), gbps.back(), mib, threads, repeats, sink);
  return 0;
}
