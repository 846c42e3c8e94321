// What an in-flight call (an OpenAI CompletionCall, a tandem gRPC Generate
// call) needs from the server that accepted it: the served model, the
// generator its tokens come from, and the metrics it records (all three
// outlive every call), and the bound on what a streaming client may leave
// unread.
#pragma once

#include <cstddef>

#include "generation/generator.h"
#include "router/generate/access_log.h"
#include "router/generate/served_model.h"
#include "router/metrics/serving_metrics.h"

namespace tandem::router {

struct CallContext {
  const ServedModel* model = nullptr;
  generation::Generator* generator = nullptr;
  ServingMetrics* metrics = nullptr;
  // the access log (router/generate/access_log.h); null = none.
  AccessLogPtr access_log;
  // a streaming client that lets more than this many bytes queue up (it
  // stopped reading) is cut off: its generation is cancelled and the
  // connection closed, so it holds neither memory nor KV blocks.
  size_t max_stream_backlog_bytes = size_t{4} << 20;
};

}  // namespace tandem::router
