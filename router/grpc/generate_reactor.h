// One Generate call: submits the request to the backend and writes its
// tokens to the client in order, one write in flight at a time (gRPC's
// flow control), queueing the rest.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "grpcpp/grpcpp.h"
#include "router/generate/choice_text_stream.h"
#include "router/generate/admission.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

// the state the backend's callbacks share with the reactor; it outlives the
// reactor when outputs arrive after the call ended.
class GenerateCall;

class GenerateReactor final : public grpc::ServerWriteReactor<tandem::v1::GenerateResponse> {
 public:
  // `admission` (and its context) outlives the call.
  GenerateReactor(const Admission& admission, const tandem::v1::GenerateRequest& request);

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  std::shared_ptr<GenerateCall> call_;
};

}  // namespace tandem::router
