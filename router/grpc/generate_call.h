// One tandem.v1.Inference/Generate call: validates the request, submits it
// to the backend and streams its tokens to the client in order through the
// shared ServerStreamWriter (one write in flight, the rest queued). A client
// that leaves cancels the request on the backend.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"
#include "router/generate/choice_text_stream.h"
#include "router/generate/completion_job.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

class GenerateCall final : public grpc_util::StreamObserver,
                           public std::enable_shared_from_this<GenerateCall> {
 public:
  using Writer = grpc_util::ServerStreamWriter<tandem::v1::GenerateResponse>;

  // the reactor gRPC drives for `request`; the call answers through it
  // (errors: NOT_FOUND for another model, INVALID_ARGUMENT for an empty
  // prompt or bad params and what the backend refuses, UNAVAILABLE when it
  // cannot take requests now, INTERNAL when the model fails).
  static grpc::ServerWriteReactor<tandem::v1::GenerateResponse>* start(
      const JobContext& context, const tandem::v1::GenerateRequest& request);

  GenerateCall(const JobContext& context, std::shared_ptr<Writer> writer);

  // grpc_util::StreamObserver
  void onStreamBroken() override;
  void onStreamDone(const std::optional<grpc::Status>& status) override;

 private:
  using Clock = std::chrono::steady_clock;

  // validates and submits; on error ends the call with it.
  void submit(const tandem::v1::GenerateRequest& request);
  void onOutput(const generation::TokenOutput& output);
  // the message for one output; sets `finish` when it is the last one.
  tandem::v1::GenerateResponse responseFor(const generation::TokenOutput& output, std::string* finish);

  const JobContext context_;
  const std::shared_ptr<Writer> writer_;
  std::mutex mu_;
  std::optional<ChoiceTextStream> text_;              // guarded by mu_
  std::optional<generation::RequestId> backend_id_;   // guarded by mu_
  bool generation_done_ = false;                      // guarded by mu_
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;                         // guarded by mu_
  Clock::time_point arrival_;
  Clock::time_point last_token_;                      // guarded by mu_
};

}  // namespace tandem::router
