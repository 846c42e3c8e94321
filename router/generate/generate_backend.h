// Where the router's requests are generated: the local engine (LocalBackend,
// router and engine in one process) or, with disaggregation, worker
// processes over gRPC. The front ends (OpenAI HTTP, tandem gRPC) see only
// this interface: token ids and sampling parameters in, tokens out.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/engine.h"
#include "server/engine/sampling_params.h"

namespace tandem::router {

using RequestId = uint64_t;

// the load the backend reports (for /metrics and admission control).
struct BackendLoad {
  int num_running = 0;
  int num_waiting = 0;
  int num_blocks = 0;
  int num_free_blocks = 0;
};

class GenerateBackend {
 public:
  // receives the request's tokens in order; the last call has finished()
  // true (token -1 when the request was cancelled or failed). May be called
  // on any thread, never concurrently for one request; must not block.
  using OutputCallback = std::function<void(const engine::EngineOutput&)>;

  virtual ~GenerateBackend() = default;

  // starts generating. returns the request's id for cancel(). errors, with
  // nothing started and `callback` never called: InvalidArgument for a
  // request the model cannot take (prompt too long for the context or the
  // cache, token ids outside the vocabulary, invalid params), Unavailable
  // when the backend is not ready or is shutting down.
  virtual absl::StatusOr<RequestId> submit(std::vector<int32_t> prompt,
                                           engine::SamplingParams params,
                                           OutputCallback callback) = 0;
  // stops a request and frees what it holds; its callback then gets a final
  // kAbort output unless it already finished. unknown ids are ignored.
  virtual void cancel(RequestId id) = 0;

  virtual bool ready() const = 0;
  virtual BackendLoad load() const = 0;
  // the longest prompt + output the model takes.
  virtual int maxModelLen() const = 0;
};
using GenerateBackendPtr = std::unique_ptr<GenerateBackend>;

}  // namespace tandem::router
