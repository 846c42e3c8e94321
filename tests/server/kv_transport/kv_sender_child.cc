// The prefill side of the cross-process kv_transport tests: a separate
// process (spawned, not forked, so gRPC starts clean) that fills its own KV
// storage with deterministic blocks and pushes some of them to D.
//
//   kv_sender_child TRANSPORT ENDPOINT TRANSFER_ID BLOCK_BYTES SEED SRC_IDS ORDER BATCH
//                   [corrupt=I] [die_after=K] [stall_after=K] [chunk=BYTES] [timeout_ms=T]
//                   [uid=U] [allow_uid=U]
//
// SRC_IDS: P's source block of each transfer index; ORDER: the order indices
// are sent in (comma lists). Exits with finish()'s absl status code (0 = OK),
// 100 + code when open() fails; die_after=K exits abruptly (no finish) after
// K blocks; stall_after=K stops sending and sleeps. uid=U runs the sender as
// uid U (the test runs as root); allow_uid=U lets it talk to a receiver
// running as U.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/kv_transport/kv_transport_factory.h"
#include "tests/fakes/corrupt_block_fault.h"
#include "tests/server/kv_transport/kv_test_blocks.h"

using namespace tandem::kv_transport;
using tandem::kv_transport::testing::fillBlock;
using tandem::kv_transport::testing::hashFor;

namespace {

std::vector<int> ints(const char* s) {
  std::vector<int> out;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int v = 0;
    if (absl::SimpleAtoi(p, &v)) out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr, "usage: see kv_sender_child.cc\n");
    return 99;
  }
  KvSenderOptions options;
  options.block_bytes = std::strtoull(argv[4], nullptr, 10);
  const uint64_t seed = std::strtoull(argv[5], nullptr, 10);
  const std::vector<int> src_ids = ints(argv[6]);
  const std::vector<int> order = ints(argv[7]);
  const int batch = std::atoi(argv[8]);
  int die_after = -1, stall_after = -1;
  for (int i = 9; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* key) { return std::strtoll(a.c_str() + std::strlen(key), nullptr, 10); };
    if (a.rfind("corrupt=", 0) == 0) {
      options.faults = std::make_shared<tandem::testing::CorruptBlockFault>(static_cast<int>(value("corrupt=")));
    }
    if (a.rfind("die_after=", 0) == 0) die_after = static_cast<int>(value("die_after="));
    if (a.rfind("stall_after=", 0) == 0) stall_after = static_cast<int>(value("stall_after="));
    if (a.rfind("chunk=", 0) == 0) options.chunk_bytes = value("chunk=");
    if (a.rfind("timeout_ms=", 0) == 0) options.timeout = std::chrono::milliseconds(value("timeout_ms="));
    if (a.rfind("allow_uid=", 0) == 0) options.shm_allowed_peer_uids.push_back(value("allow_uid="));
    if (a.rfind("uid=", 0) == 0) {
      const auto uid = static_cast<uid_t>(value("uid="));
      if (setgid(uid) != 0 || setuid(uid) != 0) return 96;
    }
  }
  auto choice = parseTransportChoice(argv[1]);
  if (!choice.ok()) return 98;
  auto sender = createKvSender(options, *choice);
  if (!sender.ok()) return 97;

  // P's own storage: enough blocks for every source id.
  int max_src = 0;
  for (int s : src_ids) max_src = std::max(max_src, s);
  std::vector<char> storage((max_src + 1) * options.block_bytes);
  for (int s : src_ids) fillBlock(seed, s, storage.data() + s * options.block_bytes, options.block_bytes);

  auto stream = (*sender)->open({argv[2], argv[3]});
  if (!stream.ok()) {
    std::fprintf(stderr, "open: %s\n", stream.status().ToString().c_str());
    return 100 + static_cast<int>(stream.status().code());
  }
  int sent = 0;
  for (size_t at = 0; at < order.size(); at += batch) {
    std::vector<KvBlock> blocks;
    for (size_t i = at; i < std::min(order.size(), at + batch); ++i) {
      const int index = order[i];
      blocks.push_back({index, hashFor(seed, index), storage.data() + src_ids[index] * options.block_bytes});
    }
    absl::Status s = (*stream)->send(blocks);
    if (!s.ok()) {
      std::fprintf(stderr, "send: %s\n", s.ToString().c_str());
      break;
    }
    sent += static_cast<int>(blocks.size());
    if (die_after >= 0 && sent >= die_after) {
      if (options.chunk_bytes > 0) usleep(100 * 1000);  // let the bytes leave
      _exit(77);  // no finish, no destructors: the process just dies
    }
    if (stall_after >= 0 && sent >= stall_after) {
      sleep(60);
      _exit(78);
    }
  }
  absl::Status s = (*stream)->finish();
  if (!s.ok()) std::fprintf(stderr, "finish: %s\n", s.ToString().c_str());
  // the status is all a test reads: exit without destructors, because gRPC
  // 1.51's shutdown in ~Channel can wait out its executor's 10 s poll timeout
  // (seen after 1 MiB chunks, gdb: grpc_shutdown joining default-executor).
  std::fflush(nullptr);
  _exit(static_cast<int>(s.code()));
}
