#include "proto/convert/finish_reason_proto.h"

namespace tandem::rpc {

tandem::v1::FinishReason toProto(generation::FinishReason reason) {
  switch (reason) {
    case generation::FinishReason::kNone: return tandem::v1::FINISH_REASON_NONE;
    case generation::FinishReason::kStop: return tandem::v1::FINISH_REASON_STOP;
    case generation::FinishReason::kLength: return tandem::v1::FINISH_REASON_LENGTH;
    case generation::FinishReason::kAbort: return tandem::v1::FINISH_REASON_ABORT;
    case generation::FinishReason::kError: return tandem::v1::FINISH_REASON_ERROR;
  }
  return tandem::v1::FINISH_REASON_ERROR;
}

generation::FinishReason fromProto(tandem::v1::FinishReason reason) {
  switch (reason) {
    case tandem::v1::FINISH_REASON_NONE: return generation::FinishReason::kNone;
    case tandem::v1::FINISH_REASON_STOP: return generation::FinishReason::kStop;
    case tandem::v1::FINISH_REASON_LENGTH: return generation::FinishReason::kLength;
    case tandem::v1::FINISH_REASON_ABORT: return generation::FinishReason::kAbort;
    default: return generation::FinishReason::kError;
  }
}

}  // namespace tandem::rpc
