// What a checksummed KV transfer over loopback TCP can reach on this
// machine at most: a raw 64 MiB send/recv between two threads (wall time
// and the process's CPU time, i.e. how many cores a raw transfer keeps
// busy) and XXH3 over the same bytes (what each side's checksum costs).
// Prints one line a round; bench/RESULTS.md "what bounds UCX over TCP" uses it.
//   tcp_hash_ceiling [rounds]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 8;
  const size_t n = size_t{64} << 20, chunk = size_t{1} << 20;
  std::vector<char> src(n), dst(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(i * 2654435761u >> 24);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listen");
    return 1;
  }
  const int tx = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(tx, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    return 1;
  }
  const int rx = accept(listener, nullptr, nullptr);
  for (int r = 0; r < rounds; ++r) {
    const double c0 = cpuSeconds(), t0 = now();
    std::thread reader([&] {
      for (size_t got = 0; got < n;) {
        const ssize_t k = recv(rx, dst.data() + got, n - got, 0);
        if (k <= 0) return;
        got += static_cast<size_t>(k);
      }
    });
    for (size_t sent = 0; sent < n;) {
      const ssize_t k = send(tx, src.data() + sent, std::min(n - sent, chunk), 0);
      if (k <= 0) break;
      sent += static_cast<size_t>(k);
    }
    reader.join();
    const double t1 = now(), c1 = cpuSeconds();
    uint64_t h = 0;
    for (size_t b = 0; b < n; b += chunk) h ^= XXH3_64bits(dst.data() + b, chunk);
    const double t2 = now();
    std::printf("raw tcp %.2f GB/s: %.1f ms wall, %.1f ms cpu (%.2f cores) | xxh3 of the same bytes %.1f ms (%016llx)\n",
                n / (t1 - t0) / 1e9, (t1 - t0) * 1e3, (c1 - c0) * 1e3, (c1 - c0) / (t1 - t0), (t2 - t1) * 1e3,
                static_cast<unsigned long long>(h));
  }
  close(tx);
  close(rx);
  close(listener);
  return 0;
}
