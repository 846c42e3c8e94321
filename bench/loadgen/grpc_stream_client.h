// StreamClient over tandem's public gRPC API (proto/tandem/v1/
// inference.proto): tandem.v1.Inference/Generate, a server stream of
// GenerateResponse messages. Uses gRPC's callback API, so each stream is a
// reactor driven by gRPC's own threads, not a thread of ours. Chat requests
// are sent as one text prompt (the gRPC API has no chat messages): the
// messages' contents joined by newlines.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/loadgen/stream_client.h"

namespace tandem::bench {

class GrpcStreamClient : public StreamClient {
 public:
  // `target` is "host:port" (a leading "grpc://" or "http://" is dropped).
  // The channel connects lazily; an unreachable server fails each request
  // with "grpc_UNAVAILABLE".
  static absl::StatusOr<std::unique_ptr<GrpcStreamClient>> create(const std::string& target,
                                                                  std::chrono::milliseconds request_timeout);
  ~GrpcStreamClient() override;

  // StreamClient
  void start(StreamRequest req, std::function<void(StreamResult)> done) override;
  void shutdown() override;

  class Impl;

 private:
  explicit GrpcStreamClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::bench
