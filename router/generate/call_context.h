// What an in-flight call (an OpenAI CompletionCall, a tandem gRPC Generate
// call) needs from the server that accepted it: the served model, the
// generator its tokens come from, and the metrics it records. All three
// outlive every call.
#pragma once

#include "generation/generator.h"
#include "router/generate/served_model.h"
#include "router/metrics/serving_metrics.h"

namespace tandem::router {

struct CallContext {
  const ServedModel* model = nullptr;
  generation::Generator* generator = nullptr;
  ServingMetrics* metrics = nullptr;
};

}  // namespace tandem::router
