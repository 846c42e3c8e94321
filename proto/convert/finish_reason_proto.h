// generation::FinishReason <-> tandem.v1.FinishReason (worker.proto), and
// the one name of each reason as the public APIs spell it.
#pragma once

#include <string_view>

#include "generation/token_output.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::rpc {

tandem::v1::FinishReason toProto(generation::FinishReason reason);
// an unknown value (a newer peer) is kError.
generation::FinishReason fromProto(tandem::v1::FinishReason reason);

// "stop" | "length" | "abort" | "error"; "" for kNone.
std::string_view finishReasonName(generation::FinishReason reason);

}  // namespace tandem::rpc
