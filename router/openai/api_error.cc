#include "router/openai/api_error.h"

#include "nlohmann/json.hpp"

namespace tandem::openai {

std::string errorBody(const ApiError& error) {
  nlohmann::ordered_json body;
  body["error"]["message"] = error.message;
  body["error"]["type"] = error.type;
  body["error"]["param"] = error.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error.param);
  body["error"]["code"] = error.code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error.code);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string serverErrorBody(int status, std::string_view message) {
  return errorBody(errorFor(status, std::string(message)));
}

ApiError errorFor(int status, std::string message, std::string param) {
  ApiError error;
  error.status = status;
  error.message = std::move(message);
  error.param = std::move(param);
  switch (status) {
    case 401: error.type = "authentication_error"; error.code = "invalid_api_key"; break;
    case 403: error.type = "permission_error"; break;
    case 404: error.type = "not_found_error"; break;
    case 408: error.type = "timeout_error"; break;
    case 413: error.type = "invalid_request_error"; error.code = "request_too_large"; break;
    case 429: error.type = "rate_limit_error"; error.code = "rate_limit_exceeded"; break;
    default:
      error.type = status >= 500 ? "server_error" : "invalid_request_error";
      break;
  }
  return error;
}
}  // namespace tandem::openai
