// What workers announce about their KV caches, as the router's KV index
// takes it (router/cluster/kv_index.h, fed as kv_subscriber.cc feeds it):
// snapshots and event batches from two workers, their capacities from
// their reports, and prompts matched against the index. The index must stay
// within its bounds whatever a worker sends.
// Input: frames (fuzz/frames.h); a frame's first byte picks the worker (bit
// 0) and the message (bits 1-2: a KvSnapshotResponse, a KvEventBatch, a
// capacity, a prompt's hash chain), the rest is the message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fuzz/frames.h"
#include "router/cluster/kv_index.h"

namespace cl = tandem::router::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cl::KvIndexOptions options;
  options.max_blocks = 512;
  options.capacity_floor_blocks = 16;
  cl::KvIndex index(options);
  const std::string workers[2] = {"10.0.0.1:7000", "10.0.0.2:7000"};
  std::map<std::string, uint64_t> last;  // the subscriber's last applied event id
  for (std::string_view frame : tandem::fuzz::splitFrames(data, size)) {
    if (frame.empty()) continue;
    const std::string& address = workers[frame[0] & 1];
    const int kind = (frame[0] >> 1) & 3;
    std::string_view body = frame.substr(1);
    if (kind == 0) {
      tandem::v1::KvSnapshotResponse snapshot;
      if (!snapshot.ParseFromArray(body.data(), static_cast<int>(body.size()))) continue;
      index.applySnapshot(address, snapshot);
      last[address] = snapshot.last_event_id();
    } else if (kind == 1) {
      tandem::v1::KvEventBatch batch;
      if (!batch.ParseFromArray(body.data(), static_cast<int>(body.size()))) continue;
      for (const tandem::v1::KvEvent& event : batch.events()) {
        if (event.event_id() <= last[address]) continue;
        if (event.event_id() != last[address] + 1 || !index.applyEvent(address, event)) break;
        last[address] = event.event_id();
      }
    } else if (kind == 2) {
      int64_t capacity = 0;
      std::memcpy(&capacity, body.data(), std::min(body.size(), sizeof(capacity)));
      index.setWorkerCapacity(address, capacity);
    } else {
      std::vector<tandem::kvcache::BlockHash> hashes(body.size() / 8);
      if (!hashes.empty()) std::memcpy(hashes.data(), body.data(), hashes.size() * 8);
      cl::TierMatch m = index.match(address, hashes);
      if (m.device > m.host || m.host > m.any || m.any > static_cast<int>(hashes.size())) {
        __builtin_trap();
      }
      (void)index.matchAll(hashes);
      (void)index.leadingBlocks(address, hashes);
    }
    for (const std::string& w : workers) {
      if (index.numBlocks(w) > index.workerLimit(w)) __builtin_trap();
    }
    if (index.totalBlocks() > options.max_blocks) __builtin_trap();
  }
  return 0;
}
