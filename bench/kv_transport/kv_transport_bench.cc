// KV transfer throughput of each transport between two processes, against
// the raw ceiling measured in the same run: a plain loopback TCP send of the
// same bytes for gRPC and for UCX over its TCP transport, a memcpy of the
// same bytes for shm.
//
// Usage: kv_transport_bench [MiB (default 64)] [repeats (default 7)] [block KiB (default 1024)]
// (KV_BENCH_CHUNK_KIB=N sets the gRPC chunk size, default 1024;
// KV_BENCH_TRANSPORTS=grpc,shm,ucx the transports measured, default all.
// ucx runs with UCX_TLS=tcp unless UCX_TLS is set.)
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

struct Timings {
  std::vector<double> raw, kv;  // GB/s per repeat
};

// P's raw reference for one repeat: `data` over loopback TCP to D's reader,
// which acks once it has every byte.
double rawTcpOnce(int sock, const std::vector<char>& data) {
  auto t0 = Clock::now();
  for (size_t off = 0; off < data.size();) {
    ssize_t n = send(sock, data.data() + off, std::min<size_t>(1 << 20, data.size() - off), 0);
    if (n <= 0) return -1;
    off += static_cast<size_t>(n);
  }
  char ack;
  if (recv(sock, &ack, 1, MSG_WAITALL) != 1) return -1;
  return static_cast<double>(data.size()) / seconds(t0) / 1e9;
}

// P's raw reference for shm: one memcpy of the same bytes into a buffer
// whose pages exist, on this one thread.
double rawMemcpyOnce(std::vector<char>& dst, const char* src) {
  auto t0 = Clock::now();
  std::memcpy(dst.data(), src, dst.size());
  return static_cast<double>(dst.size()) / seconds(t0) / 1e9 + 0.0 * dst[dst.size() / 2];
}

int connectTcp(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  return s;
}

// P: `reps` + 1 rounds (the first warms up), each the raw reference then one
// KV transfer (ids bench-0..), so both see the same machine load. Prints
// "raw_median kv_median ratio_median".
int runSender(const std::string& transport, const std::string& endpoint_list, int tcp_port,
              size_t block_bytes, int blocks, int reps) {
  // one endpoint per round: UCX's carries each transfer's token.
  std::vector<std::string> endpoints;
  for (size_t at = 0; at <= endpoint_list.size();) {
    const size_t end = std::min(endpoint_list.find(';', at), endpoint_list.size());
    endpoints.push_back(endpoint_list.substr(at, end - at));
    at = end + 1;
  }
  if (static_cast<int>(endpoints.size()) != reps + 1) return 4;
  const size_t bytes = block_bytes * blocks;
  KvSenderOptions options;
  options.block_bytes = block_bytes;
  if (const char* chunk = std::getenv("KV_BENCH_CHUNK_KIB")) {
    options.chunk_bytes = std::strtoull(chunk, nullptr, 10) << 10;
  }
  auto sender = createKvSender(options, *parseTransportChoice(transport));
  if (!sender.ok()) return 5;
  // P's storage: twice the transfer, blocks taken from scattered ids.
  std::vector<char> storage(bytes * 2);
  std::mt19937 rng(1);
  for (auto& c : storage) c = static_cast<char>(rng());
  std::vector<int> src(blocks * 2);
  std::iota(src.begin(), src.end(), 0);
  std::shuffle(src.begin(), src.end(), rng);
  const bool tcp_reference = transport != "shm";
  const int sock = tcp_reference ? connectTcp(tcp_port) : -1;
  if (tcp_reference && sock < 0) return 2;
  std::vector<char> raw_data(tcp_reference ? bytes : 0, 1);
  std::vector<char> copy_dst(transport == "shm" ? bytes : 0, 0);
  Timings t;
  std::vector<double> ratios;
  for (int r = 0; r <= reps; ++r) {
    const double raw =
        sock >= 0 ? rawTcpOnce(sock, raw_data) : rawMemcpyOnce(copy_dst, storage.data());
    if (raw < 0) return 3;
    auto t0 = Clock::now();
    auto stream = (*sender)->open({endpoints[r], "bench-" + std::to_string(r)});
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
    const double kv = static_cast<double>(bytes) / seconds(t0) / 1e9;
    if (r > 0) {
      t.raw.push_back(raw);
      t.kv.push_back(kv);
      ratios.push_back(kv / raw);
    }
  }
  std::printf("%.3f %.3f %.3f\n", median(t.raw), median(t.kv), median(ratios));
  if (sock >= 0) close(sock);
  return 0;
}

struct Result {
  double raw = -1, kv = -1, ratio = -1;
};

// runs this program as P and returns the medians it printed.
Result spawnSender(const std::string& transport, const std::string& endpoint, int tcp_port,
                   size_t block_bytes, int blocks, int reps) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  std::vector<std::string> args = {"/proc/self/exe", "--sender", transport, endpoint,
                                   std::to_string(tcp_port), std::to_string(block_bytes),
                                   std::to_string(blocks), std::to_string(reps)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) return {};
  char buf[128] = {};
  ssize_t n = read(pipefd[0], buf, sizeof(buf) - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Result result;
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(buf, "%lf %lf %lf", &result.raw, &result.kv, &result.ratio) != 3) {
    std::fprintf(stderr, "%s sender failed (status %d)\n", transport.c_str(), status);
    return {};
  }
  return result;
}

// D's end of the raw TCP reference: reads each round's bytes and acks.
class RawTcpReader {
 public:
  RawTcpReader(size_t bytes, int rounds) {
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(listen_, 1);
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, bytes, rounds] {
      int s = accept(listen_, nullptr, nullptr);
      std::vector<char> buf(bytes);
      for (int r = 0; r < rounds; ++r) {
        if (recv(s, buf.data(), bytes, MSG_WAITALL) != static_cast<ssize_t>(bytes)) break;
        char ack = 1;
        send(s, &ack, 1, 0);
      }
      close(s);
    });
  }
  ~RawTcpReader() {
    thread_.join();
    close(listen_);
  }
  int port() const { return port_; }

 private:
  int listen_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// D of a KV transfer run over `transport`: expects every repeat, then lets P
// push (and, for grpc, stream the raw TCP reference before each transfer).
Result kvTransfer(const std::string& transport, ShmRegionPtr region, int blocks,
                  size_t block_bytes, int reps) {
  KvReceiverConfig config;
  config.transports = *parseTransportChoice(transport);
  auto receiver = createKvReceiver(config, {region->data(), block_bytes, blocks * 2}, region);
  if (!receiver.ok()) return {};
  std::mt19937 rng(2);
  std::vector<int32_t> dst(blocks * 2);
  std::iota(dst.begin(), dst.end(), 0);
  std::shuffle(dst.begin(), dst.end(), rng);
  dst.resize(blocks);
  for (int r = 0; r <= reps; ++r) {
    ExpectedTransfer t{"bench-" + std::to_string(r), dst, {}, std::chrono::seconds(120)};
    for (int i = 0; i < blocks; ++i) t.hashes.push_back(static_cast<uint64_t>(i));
    if (!(*receiver)->expect(std::move(t), [](const TransferResult&) {}).ok()) return {};
  }
  std::string endpoints;
  for (int r = 0; r <= reps; ++r) {
    if (r > 0) endpoints += ';';
    endpoints += (*receiver)->transferEndpoint("bench-" + std::to_string(r));
  }
  if (transport == "shm") return spawnSender(transport, endpoints, 0, block_bytes, blocks, reps);
  RawTcpReader reader(block_bytes * blocks, reps + 1);
  return spawnSender(transport, endpoints, reader.port(), block_bytes, blocks, reps);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 8 && std::string(argv[1]) == "--sender") {
    return runSender(argv[2], argv[3], std::atoi(argv[4]), std::strtoull(argv[5], nullptr, 10),
                     std::atoi(argv[6]), std::atoi(argv[7]));
  }
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  const size_t block_bytes = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024) << 10;
  const int blocks = static_cast<int>((mib << 20) / block_bytes);
  const size_t bytes = block_bytes * blocks;
  auto region = ShmRegion::create(bytes * 2);
  if (!region.ok()) return 1;
  std::memset((*region)->data(), 0, (*region)->bytes());  // D's KV storage is in use: pages exist

  std::printf("%d blocks of %zu KiB = %zu MiB, median of %d rounds (after 1 warm-up),\n"
              "each round: the raw reference, then one KV transfer\n",
              blocks, block_bytes >> 10, bytes >> 20, reps);
  const char* chosen = std::getenv("KV_BENCH_TRANSPORTS");
  const std::string transports = chosen != nullptr ? chosen : "grpc,shm,ucx";
  auto wanted = [&](const char* t) { return transports.find(t) != std::string::npos; };
  bool ok = true;
  if (wanted("grpc")) {
    const Result grpc = kvTransfer("grpc", *region, blocks, block_bytes, reps);
    std::printf("raw loopback TCP : %6.2f GB/s\n", grpc.raw);
    std::printf("grpc KV transfer : %6.2f GB/s  (%3.0f%% of raw TCP; median per-round ratio %3.0f%%)\n",
                grpc.kv, 100 * grpc.kv / grpc.raw, 100 * grpc.ratio);
    ok = ok && grpc.kv > 0;
  }
  if (wanted("shm")) {
    const Result shm = kvTransfer("shm", *region, blocks, block_bytes, reps);
    std::printf("memcpy           : %6.2f GB/s\n", shm.raw);
    std::printf("shm KV transfer  : %6.2f GB/s  (%3.0f%% of memcpy; median per-round ratio %3.0f%%)\n",
                shm.kv, 100 * shm.kv / shm.raw, 100 * shm.ratio);
    ok = ok && shm.kv > 0;
  }
  if (wanted("ucx")) {
    // D and P (which inherits it) use UCX's TCP transport unless told otherwise.
    setenv("UCX_TLS", "tcp", 0);
    const Result ucx = kvTransfer("ucx", *region, blocks, block_bytes, reps);
    std::printf("raw loopback TCP : %6.2f GB/s\n", ucx.raw);
    std::printf("ucx KV transfer  : %6.2f GB/s  (%3.0f%% of raw TCP; median per-round ratio %3.0f%%; UCX_TLS=%s)\n",
                ucx.kv, 100 * ucx.kv / ucx.raw, 100 * ucx.ratio, std::getenv("UCX_TLS"));
    ok = ok && ucx.kv > 0;
  }
  return ok ? 0 : 1;
}
