// What the worker tests share: options for a small worker on loopback, a
// blocking Worker.Generate client, an HTTP GET, and reading one sample out
// of Prometheus text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "server/worker/worker_options.h"

namespace tandem::worker::testing {

// a worker serving stories260K on 127.0.0.1, any free ports, one compute thread.
WorkerOptions smallWorkerOptions(WorkerRole role, int block_size = 16);

struct GenerateResult {
  grpc::Status status;
  std::vector<int32_t> tokens;
  std::string prefill;  // from the first message
  std::string finish;   // from the last message
  int num_prompt_tokens = 0;
  int num_cached_tokens = 0;
};

// Worker.Generate on `address` with greedy sampling (EOS ignored), to the
// end, over a channel `auth` makes (the cluster secret, TLS).
GenerateResult generate(const std::string& address, const std::vector<int32_t>& prompt,
                        int max_tokens, const std::string& prefill_address = "",
                        const grpc_util::ClusterAuthPtr& auth = grpc_util::ClusterAuth::none());

// GET http://127.0.0.1:port/path -> (status code, body); code 0 when it fails.
std::pair<int, std::string> httpGet(int port, const std::string& path);

// the value of the sample `series` (name{labels} exactly as rendered, or a
// bare name) in Prometheus text; 0 when absent.
double metricValue(const std::string& text, const std::string& series);

}  // namespace tandem::worker::testing
