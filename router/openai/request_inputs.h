// The parts of a generation request that say what to generate from: the
// prompts of /v1/completions, and the messages, tools and template
// arguments of /v1/chat/completions. Internal to tandem_openai; called by
// parseGenerationRequest with the reader of the body's top-level object.
#pragma once

#include "nlohmann/json.hpp"
#include "router/openai/json_field.h"
#include "router/openai/openai_request.h"

namespace tandem::openai {

// "prompt": string | [string] | [int] | [[int]] into request.prompts. A
// missing prompt, an empty array, an empty token list, a negative or
// non-integer token id, mixed kinds and more than kMaxPrompts prompts are
// recorded on `reader` as 400s with param "prompt".
void readPrompts(FieldReader& reader, GenerationRequest& request);

// checks "messages": a non-empty array of at most kMaxMessages objects, each with a string
// "role" and a "content" that is absent, null, a string, or an array of
// {"type":"text","text":string} parts. Errors have param "messages".
void checkMessages(FieldReader& reader);

// checks "tools" (function tools) and reads "tool_choice" (tool_request.h),
// checks "chat_template_kwargs" (an object), and reads
// add_generation_prompt and continue_final_message (both true is a 400).
void readTemplateFields(FieldReader& reader, GenerationRequest& request);

// moves messages, tools (unless tool_choice is none) and
// chat_template_kwargs from `body` into `request`, with the messages'
// tool-call arguments parsed for the template (parseToolCallArguments).
// Call once the checks above have passed and nothing reads `body` any more.
void takeTemplateInputs(nlohmann::ordered_json& body, GenerationRequest& request);

}  // namespace tandem::openai
