// KV transfer throughput of each transport between two processes, against
// the raw ceiling measured in the same run: a plain loopback TCP send of the
// same bytes for gRPC, a memcpy of the same bytes for shm.
//
// Usage: kv_transport_bench [MiB (default 64)] [repeats (default 7)] [block KiB (default 1024)]
// (KV_BENCH_CHUNK_KIB=N sets the gRPC chunk size, default 1024.)
//
// This process is D (receiver, KV storage in a memfd region twice the
// transfer); it re-executes itself as P (`--sender ...`), which owns its own
// KV storage and times each transfer from open() to finish() returning, i.e.
// until D verified every block's checksum. Blocks go in batches of 8, with
// scattered source and destination ids. Prints medians in GB/s (1e9 B/s).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/kv_transport/kv_transport_factory.h"

extern char** environ;

using namespace tandem::kv_transport;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBatch = 8;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// P: `reps` + 1 transfers (the first warms up), ids bench-0..; prints the median GB/s.
int runSender(const std::string& transport, const std::string& endpoint, size_t block_bytes,
              int blocks, int reps) {
  if (transport == "tcp") {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::atoi(endpoint.c_str())));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 2;
    std::vector<char> data(block_bytes * blocks, 1);
    std::vector<double> gbps;
    for (int r = 0; r <= reps; ++r) {
      auto t0 = Clock::now();
      for (size_t off = 0; off < data.size();) {
        ssize_t n = send(s, data.data() + off, std::min<size_t>(1 << 20, data.size() - off), 0);
        if (n <= 0) return 3;
        off += static_cast<size_t>(n);
      }
      char ack;
      if (recv(s, &ack, 1, MSG_WAITALL) != 1) return 4;
      if (r > 0) gbps.push_back(static_cast<double>(data.size()) / seconds(t0) / 1e9);
    }
    std::printf("%.3f\n", median(gbps));
    close(s);
    return 0;
  }
  KvSenderOptions options;
  options.block_bytes = block_bytes;
  if (const char* chunk = std::getenv("KV_BENCH_CHUNK_KIB")) {
    options.chunk_bytes = std::strtoull(chunk, nullptr, 10) << 10;
  }
  auto sender = createKvSender(options, *parseTransportChoice(transport));
  if (!sender.ok()) return 5;
  // P's storage: twice the transfer, blocks taken from scattered ids.
  std::vector<char> storage(block_bytes * blocks * 2);
  std::mt19937 rng(1);
  for (auto& c : storage) c = static_cast<char>(rng());
  std::vector<int> src(blocks * 2);
  std::iota(src.begin(), src.end(), 0);
  std::shuffle(src.begin(), src.end(), rng);
  std::vector<double> gbps;
  for (int r = 0; r <= reps; ++r) {
    auto t0 = Clock::now();
    auto stream = (*sender)->open({endpoint, "bench-" + std::to_string(r)});
    if (!stream.ok()) {
      std::fprintf(stderr, "open: %s\n", stream.status().ToString().c_str());
      return 6;
    }
    for (int i = 0; i < blocks; i += kBatch) {
      std::vector<KvBlock> batch;
      for (int j = i; j < std::min(blocks, i + kBatch); ++j) {
        batch.push_back({j, static_cast<uint64_t>(j), storage.data() + src[j] * block_bytes});
      }
      if (!(*stream)->send(batch).ok()) return 7;
    }
    absl::Status s = (*stream)->finish();
    if (!s.ok()) {
      std::fprintf(stderr, "finish: %s\n", s.ToString().c_str());
      return 8;
    }
    if (r > 0) gbps.push_back(static_cast<double>(block_bytes) * blocks / seconds(t0) / 1e9);
  }
  std::printf("%.3f\n", median(gbps));
  return 0;
}

// runs this program as P and returns the median it printed (or -1).
double spawnSender(const std::string& transport, const std::string& endpoint, size_t block_bytes,
                   int blocks, int reps) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  std::vector<std::string> args = {"/proc/self/exe", "--sender", transport, endpoint,
                                   std::to_string(block_bytes), std::to_string(blocks),
                                   std::to_string(reps)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) return -1;
  char buf[64] = {};
  ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s sender failed (status %d)\n", transport.c_str(), status);
    return -1;
  }
  return std::atof(buf);
}

// D of a raw TCP run: reads each repeat's bytes and acks.
double rawTcp(size_t bytes, int reps, size_t block_bytes, int blocks) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  listen(l, 1);
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread reader([&] {
    int s = accept(l, nullptr, nullptr);
    std::vector<char> buf(bytes);
    for (int r = 0; r <= reps; ++r) {
      if (recv(s, buf.data(), bytes, MSG_WAITALL) != static_cast<ssize_t>(bytes)) break;
      char ack = 1;
      send(s, &ack, 1, 0);
    }
    close(s);
  });
  double gbps = spawnSender("tcp", std::to_string(ntohs(a.sin_port)), block_bytes, blocks, reps);
  reader.join();
  close(l);
  return gbps;
}

double memcpyBandwidth(size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<double> gbps;
  for (int r = 0; r <= reps; ++r) {
    auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    if (r > 0) gbps.push_back(static_cast<double>(bytes) / seconds(t0) / 1e9);
  }
  return median(gbps) + 0.0 * dst[bytes / 2];
}

// D of a KV transfer run over `transport`: expects every repeat, then lets P push.
double kvTransfer(const std::string& transport, ShmRegionPtr region, int blocks, size_t block_bytes,
                  int reps) {
  KvReceiverConfig config;
  config.transports = *parseTransportChoice(transport);
  auto receiver = createKvReceiver(config, {region->data(), block_bytes, blocks * 2}, region);
  if (!receiver.ok()) return -1;
  std::mt19937 rng(2);
  std::vector<int32_t> dst(blocks * 2);
  std::iota(dst.begin(), dst.end(), 0);
  std::shuffle(dst.begin(), dst.end(), rng);
  dst.resize(blocks);
  for (int r = 0; r <= reps; ++r) {
    ExpectedTransfer t{"bench-" + std::to_string(r), dst, {}, std::chrono::seconds(120)};
    for (int i = 0; i < blocks; ++i) t.hashes.push_back(static_cast<uint64_t>(i));
    if (!(*receiver)->expect(std::move(t), [](const TransferResult&) {}).ok()) return -1;
  }
  return spawnSender(transport, (*receiver)->endpoint(), block_bytes, blocks, reps);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 7 && std::string(argv[1]) == "--sender") {
    return runSender(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10), std::atoi(argv[5]),
                     std::atoi(argv[6]));
  }
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  const size_t block_bytes = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024) << 10;
  const int blocks = static_cast<int>((mib << 20) / block_bytes);
  const size_t bytes = block_bytes * blocks;
  auto region = ShmRegion::create(bytes * 2);
  if (!region.ok()) return 1;
  std::memset((*region)->data(), 0, (*region)->bytes());  // D's KV storage is in use: pages exist

  std::printf("%d blocks of %zu KiB = %zu MiB, median of %d repeats (after 1 warm-up)\n", blocks,
              block_bytes >> 10, bytes >> 20, reps);
  const double tcp = rawTcp(bytes, reps, block_bytes, blocks);
  const double grpc = kvTransfer("grpc", *region, blocks, block_bytes, reps);
  const double copy = memcpyBandwidth(bytes, reps);
  const double shm = kvTransfer("shm", *region, blocks, block_bytes, reps);
  std::printf("raw loopback TCP : %6.2f GB/s\n", tcp);
  std::printf("grpc KV transfer : %6.2f GB/s  (%3.0f%% of raw TCP)\n", grpc, 100 * grpc / tcp);
  std::printf("memcpy           : %6.2f GB/s\n", copy);
  std::printf("shm KV transfer  : %6.2f GB/s  (%3.0f%% of memcpy)\n", shm, 100 * shm / copy);
  return 0;
}
