#include "common/http/error_body.h"

#include "nlohmann/json.hpp"

namespace tandem::http {

std::string defaultErrorBody(int status, std::string_view message) {
  nlohmann::ordered_json body;
  body["error"]["message"] = message;
  body["error"]["code"] = status;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
