// Measures the machine's memory copy bandwidth with buffers far larger than
// the last-level cache: the physical limit decode speed is compared against.
// Usage: copy_bandwidth [MiB per buffer (default 2048)] [threads (default 2)] [repeats (default 7)]
// Prints the median GB/s counting bytes read + bytes written.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2048;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  int repeats = argc > 3 ? std::atoi(argv[3]) : 7;
  size_t bytes = mib << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // touches every page first
  std::vector<double> gbps;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    size_t part = bytes / threads;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { std::memcpy(dst.data() + t * part, src.data() + t * part, part); });
    }
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(2.0 * static_cast<double>(part * threads) / s / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("copy bandwidth: median %.2f GB/s (read+write), min %.2f, max %.2f; %zu MiB, %d threads, %d repeats\n",
              gbps[gbps.size() / 2], gbps.front(), gbps.back(), mib, threads, repeats);
  return 0;
}
