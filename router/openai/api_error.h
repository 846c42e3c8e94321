// OpenAI-shaped error bodies: {"error":{"message","type","param","code"}}.
// One place builds them, for the API's errors (400, 404, ...) and, through
// HttpServerOptions::error_body, for the HTTP server's own (413, 408, ...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::openai {

struct ApiError {
  int status = 400;
  std::string message;
  // OpenAI's types: "invalid_request_error", "authentication_error",
  // "not_found_error", "rate_limit_error", "server_error", ...
  std::string type = "invalid_request_error";
  std::string param;  // the offending field; "" = null
  std::string code;   // "" = null
  int64_t retry_after_s = 0;  // a 429's Retry-After, seconds; 0 = 1
};

// the JSON body of `error`.
std::string errorBody(const ApiError& error);

// the error for a status with a message, with the type OpenAI uses for it.
ApiError errorFor(int status, std::string message, std::string param = "");

// the body of the HTTP server's own error responses (HttpServerOptions::error_body).
std::string serverErrorBody(int status, std::string_view message);

}  // namespace tandem::openai
