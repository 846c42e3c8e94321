// The server's own error responses (400 malformed, 408, 413, 431, 503 over
// the connection limit, 500 for a request dropped unanswered): their status
// line's reason phrase, and a body whose shape the application chooses
// (HttpServerOptions::error_body; the OpenAI front end sends OpenAI error
// objects).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace tandem::http {

// the JSON body of the server's error response for `status`.
using ErrorBodyFormatter = std::function<std::string(int status, std::string_view message)>;

// {"error":{"message":...,"code":status}}: the body when the application
// chooses none.
std::string defaultErrorBody(int status, std::string_view message);

// "Bad Request", "Not Found", ...
std::string_view reasonPhrase(int status);

}  // namespace tandem::http
