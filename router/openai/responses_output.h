// The output of one Responses API call (POST /v1/responses), built as the
// generated text arrives: output items (an assistant "message" with one
// output_text part; a "function_call" per parsed tool call), the response
// object, and for a streaming call the typed server-sent events OpenAI
// sends — response.created, response.in_progress,
// response.output_item.added, response.content_part.added,
// response.output_text.delta / .done, response.function_call_arguments.delta
// / .done, response.content_part.done, response.output_item.done, and
// response.completed (response.incomplete when max_output_tokens cut it,
// response.failed on an error) — each numbered by sequence_number. No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "router/openai/responses_request.h"
#include "router/openai/tool_call_parser.h"

namespace tandem::openai {

struct ResponsesUsage {
  int input_tokens = 0;
  int output_tokens = 0;
  int cached_tokens = 0;
};

class ResponsesOutput {
 public:
  // `request` must outlive the output. `id` is "resp_...", `created_at`
  // unix seconds, `model` the served model's name. With `stream`, start(),
  // add() and finish() return SSE events; without, they return "".
  ResponsesOutput(const ResponsesRequest& request, std::string id, int64_t created_at,
                  std::string model, bool stream);

  // response.created and response.in_progress.
  std::string start();
  // the next parsed text of the output (content, tool-call pieces).
  std::string add(const ParsedText& parsed);
  // the output ended: `length` when max_output_tokens cut it (status
  // "incomplete"), else "completed". Closes the open item; returns its
  // closing events and response.completed / response.incomplete.
  std::string finish(bool length, const ResponsesUsage& usage);
  // the generation failed: response.failed with `message`.
  std::string fail(std::string_view message);

  // the response object as it stands (the non-streaming body after finish()).
  std::string body() const;

 private:
  enum class Open { kNone, kMessage, kFunctionCall };

  nlohmann::ordered_json response() const;
  // an SSE event of `type` with `fields`, numbered.
  std::string event(const char* type, nlohmann::ordered_json fields);
  std::string openMessage();
  std::string openFunctionCall(const ToolCallDelta& delta);
  std::string closeOpenItem();

  const ResponsesRequest& request_;
  const std::string id_;
  const int64_t created_at_;
  const std::string model_;
  const bool stream_;
  int sequence_ = 0;
  std::string status_ = "in_progress";
  nlohmann::ordered_json incomplete_details_;
  nlohmann::ordered_json error_;
  nlohmann::ordered_json usage_;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();
  Open open_ = Open::kNone;
};

}  // namespace tandem::openai
