// Counters of the G3 disk tier, exported by the worker as Prometheus metrics.
// Monotonic counters only grow; the gauges (marked) go up and down. All are
// atomics: the tier writes them from its callers' and completion threads,
// the exporter reads them from its own.
#pragma once

#include <atomic>
#include <cstdint>

#include "kvcache/tiers/io_latency_histogram.h"

namespace tandem::kvcache {

struct DiskTierStats {
  // gauges
  std::atomic<int64_t> capacity_blocks{0};
  std::atomic<int64_t> used_blocks{0};       // readable blocks held
  std::atomic<bool> disabled{false};         // after ENOSPC / EIO / a missing directory
  std::atomic<bool> uring{false};            // io_uring in use (false: the thread pool)
  std::atomic<bool> direct_io{false};        // O_DIRECT in use (false: buffered I/O)
  std::atomic<bool> uring_fallback{false};   // io_uring was asked for but could not be set up
  std::atomic<bool> direct_fallback{false};  // O_DIRECT was refused by the file system

  // counters
  std::atomic<int64_t> lookups{0};                  // load() calls
  std::atomic<int64_t> hits{0};                     // load() calls that found the block
  std::atomic<int64_t> misses{0};                   // load() calls that did not
  std::atomic<int64_t> stores{0};                   // blocks written (offloads)
  std::atomic<int64_t> loads{0};                    // blocks read back intact (onboards)
  std::atomic<int64_t> evictions{0};                // blocks dropped by LRU to make room
  std::atomic<int64_t> bytes_read{0};
  std::atomic<int64_t> bytes_written{0};
  std::atomic<int64_t> checksum_failures{0};        // loads that found corrupt bytes
  std::atomic<int64_t> admission_rejections{0};     // store() refused: seen < min_hits times
  std::atomic<int64_t> backpressure_rejections{0};  // store() refused: queue full
  std::atomic<int64_t> io_errors{0};                // failed reads/writes (each disables G3)
  std::atomic<int64_t> recovered_blocks{0};         // valid records found at open
  std::atomic<int64_t> dropped_torn{0};             // at open: records cut short by the file's end
  std::atomic<int64_t> dropped_foreign{0};          // at open: another model's records
  std::atomic<int64_t> dropped_bad_header{0};       // at open: header checksum or fields wrong
  std::atomic<int64_t> dropped_bad_payload{0};      // at open, verify_at_open only: payload checksum

  IoLatencyHistogram read_latency;   // submit to completion of each block read
  IoLatencyHistogram write_latency;  // submit to completion of each block write
};

}  // namespace tandem::kvcache
