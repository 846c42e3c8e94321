// The generation seam: where the front ends' requests are generated: the local engine (LocalGenerator,
// router and engine in one process) or, with disaggregation, worker
// processes over gRPC. The front ends (OpenAI HTTP, tandem gRPC) see only
// this interface: token ids and sampling parameters in, tokens out.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "generation/request_limits.h"
#include "generation/sampling_params.h"
#include "generation/token_output.h"

namespace tandem::generation {

using RequestId = uint64_t;

// the load the generator reports (for /metrics and admission control).
struct GeneratorLoad {
  int num_running = 0;
  int num_waiting = 0;
  int num_blocks = 0;
  int num_free_blocks = 0;
};

class Generator {
 public:
  // receives the request's tokens in order; the last call has finished()
  // true (token -1 when the request was cancelled or failed). May be called
  // on any thread, never concurrently for one request; must not block.
  using OutputCallback = std::function<void(const TokenOutput&)>;

  virtual ~Generator() = default;

  // starts generating. returns the request's id for cancel(). errors, with
  // nothing started and `callback` never called: InvalidArgument for a
  // request the model cannot take (checkRequest against limits(): invalid
  // params, an empty prompt, and with a LimitKind payload a prompt too long
  // for the context or the cache or token ids outside the vocabulary),
  // Unavailable when the generator is not ready or is shutting down,
  // ResourceExhausted when it sheds the request (retry later).
  virtual absl::StatusOr<RequestId> submit(std::vector<int32_t> prompt,
                                           SamplingParams params,
                                           OutputCallback callback) = 0;
  // stops a request and frees what it holds; its callback then gets a final
  // kAbort output unless it already finished. unknown ids are ignored.
  virtual void cancel(RequestId id) = 0;

  virtual bool ready() const = 0;
  virtual GeneratorLoad load() const = 0;
  // what a request may ask (the context, vocabulary and KV cache of the
  // model as it runs here; 0 = not known yet). submit checks against these.
  virtual RequestLimits limits() const = 0;
};
using GeneratorPtr = std::unique_ptr<Generator>;

}  // namespace tandem::generation
