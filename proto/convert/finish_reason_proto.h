// generation::FinishReason <-> tandem.v1.FinishReason (worker.proto); the
// names are generation::finishReasonName.
#pragma once

#include "generation/token_output.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::rpc {

tandem::v1::FinishReason toProto(generation::FinishReason reason);
// an unknown value (a newer peer) is kError.
generation::FinishReason fromProto(tandem::v1::FinishReason reason);

}  // namespace tandem::rpc
