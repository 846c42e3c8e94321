// What a worker reports about itself is a peer's message, checked like a
// client's before the router believes it: the WorkerInfo it registers (or
// answers Worker.Info) with, and the WorkerStats its polls return. A fake
// or broken worker must not steer routing with absurd numbers (a negative
// load attracts every request) or plant oversized strings in the pool.
#pragma once

#include "absl/status/status.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::router::cluster {

// bounds of what a worker may report.
inline constexpr size_t kMaxWorkerIdBytes = 128;
inline constexpr size_t kMaxModelNameBytes = 256;
inline constexpr size_t kMaxPathBytes = 4096;     // model_path, metrics_url, kv_endpoint
inline constexpr size_t kMaxHostBytes = 253;      // a DNS name's limit
inline constexpr int32_t kMaxModelLen = 1 << 24;  // tokens
inline constexpr int32_t kMaxVocabSize = 1 << 24;
inline constexpr int32_t kMaxBlockSize = 1 << 16;  // tokens a KV block
inline constexpr int32_t kMaxCount = 1 << 30;      // blocks, sequences, transfers
inline constexpr int64_t kMaxQueuedTokens = int64_t{1} << 40;

// OK, or InvalidArgument naming the first bad field: worker_id 1..128
// printable ASCII without spaces; address host:port with a host of
// printable ASCII (≤ 253 bytes) and a port 1..65535; a known role;
// model_name 1..256 printable bytes; model_path, metrics_url and
// kv_endpoint ≤ 4096 bytes without control characters; max_model_len
// 1..2^24; vocab_size 1..2^24; block_size 1..65536; num_blocks 0..2^30.
absl::Status checkWorkerInfo(const tandem::v1::WorkerInfo& info);

// OK, or InvalidArgument naming the first bad field: every count 0..2^30
// (running, waiting, blocks, free, active, transfers), free and active
// blocks at most num_blocks, prefill tokens queued 0..2^40, worker_id ≤
// 128 bytes.
absl::Status checkWorkerStats(const tandem::v1::WorkerStats& stats);

}  // namespace tandem::router::cluster
