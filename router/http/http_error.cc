#include "router/http/http_error.h"

#include "nlohmann/json.hpp"

namespace tandem::http {

std::string errorBody(const ApiError& error) {
  nlohmann::ordered_json body;
  body["error"]["message"] = error.message;
  body["error"]["type"] = error.type;
  body["error"]["param"] = error.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error.param);
  body["error"]["code"] = error.code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error.code);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

}  // namespace tandem::http
