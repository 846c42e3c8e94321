#include "router/generate/admission_api_error.h"

namespace tandem::router {
namespace {

int httpStatus(AdmissionReason reason) {
  switch (reason) {
    case AdmissionReason::kUnauthenticated: return 401;
    case AdmissionReason::kNotReady:
    case AdmissionReason::kDraining: return 503;
    case AdmissionReason::kRateLimited:
    case AdmissionReason::kOverloaded: return 429;
    case AdmissionReason::kUnknownModel: return 404;
    case AdmissionReason::kEmptyPrompt:
    case AdmissionReason::kInvalidPrompt:
    case AdmissionReason::kPromptTooLong:
    case AdmissionReason::kContextLengthExceeded:
    case AdmissionReason::kRequestTooLarge:
    case AdmissionReason::kInvalidRequest: return 400;
  }
  return 500;
}

}  // namespace

openai::ApiError toApiError(const AdmissionError& error) {
  openai::ApiError api = openai::errorFor(httpStatus(error.reason), error.message, error.field);
  if (error.reason == AdmissionReason::kPromptTooLong ||
      error.reason == AdmissionReason::kContextLengthExceeded) {
    api.code = "context_length_exceeded";
  }
  if (error.reason == AdmissionReason::kRateLimited) {
    // as OpenAI: the type names the limit hit ("requests" or "tokens").
    api.type = error.rate_limit;
    api.code = "rate_limit_exceeded";
    api.retry_after_s = error.retry_after_s;
  }
  return api;
}

}  // namespace tandem::router
