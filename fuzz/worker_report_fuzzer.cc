// What a worker reports about itself, as the router checks it before it
// believes it (router/cluster/worker_report_check.h): the WorkerInfo it
// registers with and the WorkerStats its polls return. A report that passes
// then feeds the router's load model (router/cluster/worker_load_model.h),
// whose predictions must stay finite and non-negative.
// Input: byte 0 bit 0 picks WorkerInfo (0) or WorkerStats (1), the rest is
// the message.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "router/cluster/worker_load_model.h"
#include "router/cluster/worker_report_check.h"

namespace cl = tandem::router::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool stats = data[0] & 1;
  const void* body = data + 1;
  const int bytes = static_cast<int>(size - 1);
  if (!stats) {
    tandem::v1::WorkerInfo info;
    if (!info.ParseFromArray(body, bytes)) return 0;
    (void)cl::checkWorkerInfo(info);
    return 0;
  }
  tandem::v1::WorkerStats s;
  if (!s.ParseFromArray(body, bytes)) return 0;
  if (!cl::checkWorkerStats(s).ok()) return 0;
  cl::WorkerLoadModel model;
  const std::string address = "10.0.0.1:7000";
  model.onRouted(1, address, 4096, 16, 1.0);
  model.observeStats(address, static_cast<double>(s.num_prefill_tokens_queued()),
                     s.num_running() + s.num_waiting(), s.num_active_blocks());
  model.onFirstToken(1, 2.0);
  cl::WorkerLoad load = model.load(address, 3.0);
  if (!std::isfinite(load.queued_prefill_tokens) || load.queued_prefill_tokens < 0 ||
      load.running < 0 || load.active_blocks < 0 || !(load.prefill_tokens_per_s > 0) ||
      !std::isfinite(load.prefill_tokens_per_s)) {
    __builtin_trap();
  }
  return 0;
}
