// The Responses API without I/O: parseResponsesRequest turns each input
// form into the chat request it amounts to and refuses what this server
// does not do (stored responses, structured output for now) naming the
// field; ResponsesOutput builds the response object and the typed event
// stream, numbered, with text and function-call items.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/openai/responses_output.h"
#include "router/openai/responses_request.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

ResponsesRequest parseResponsesOk(const std::string& body) {
  ResponsesParseResult result = parseResponsesRequest(body);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << "rejected " << body << ": " << error->message << " (" << error->param << ")";
    return {};
  }
  return std::get<ResponsesRequest>(std::move(result));
}

ApiError parseError(const std::string& body) {
  ResponsesParseResult result = parseResponsesRequest(body);
  if (!std::holds_alternative<ApiError>(result)) {
    ADD_FAILURE() << "accepted " << body;
    return {};
  }
  return std::get<ApiError>(result);
}

TEST(ResponsesRequestTest, AStringInputIsOneUserMessageAfterTheInstructions) {
  ResponsesRequest r = parseResponsesOk(
      R"({"model":"m","input":"Once upon a time","instructions":"Be brief.",)"
      R"("max_output_tokens":20,"temperature":0.5,"top_p":0.9,"store":false,"metadata":{"k":"v"}})");
  EXPECT_EQ(r.chat.endpoint, Endpoint::kChatCompletions);
  EXPECT_EQ(r.chat.messages.dump(),
            R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Once upon a time"}])");
  EXPECT_EQ(r.chat.sampling.max_tokens, 20);
  EXPECT_TRUE(r.chat.max_tokens_set);
  EXPECT_FLOAT_EQ(r.chat.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.chat.sampling.top_p, 0.9f);
  EXPECT_EQ(r.chat.n, 1);
  EXPECT_FALSE(r.chat.stream);
  EXPECT_FALSE(r.store);
  EXPECT_EQ(r.instructions, "Be brief.");
  EXPECT_EQ(r.max_output_tokens, 20);
  EXPECT_EQ(r.metadata.dump(), R"({"k":"v"})");
}

TEST(ResponsesRequestTest, MessageItemsAndToolTurnsBecomeChatMessages) {
  ResponsesRequest r = parseResponsesOk(R"({"model":"m","stream":true,"input":[)"
      R"({"role":"developer","content":"rules"},)"
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]},)"
      R"({"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},)"
      R"({"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},)"
      R"({"type":"function_call_output","call_id":"call_1","output":"rain"},)"
      R"({"role":"assistant","content":[{"type":"output_text","text":"It rains."}]}],)"
      R"("tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},)"
      R"({"type":"function","name":"get_time","description":"now"}],)"
      R"("tool_choice":{"type":"function","name":"get_time"}})");
  const Json& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].dump(), R"({"role":"system","content":"rules"})");
  EXPECT_EQ(m[1].dump(), R"({"role":"user","content":[{"type":"text","text":"weather?"}]})");
  EXPECT_EQ(m[2]["role"], "assistant");
  ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[2]["tool_calls"][0].dump(),
            R"({"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Oslo"}}})");
  EXPECT_EQ(m[3].dump(), R"({"role":"tool","tool_call_id":"call_1","content":"rain"})");
  EXPECT_EQ(m[4]["content"][0]["text"], "It rains.");
  EXPECT_EQ(r.chat.tools.dump(),
            R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},)"
            R"({"type":"function","function":{"name":"get_time","description":"now"}}])");
  EXPECT_EQ(r.chat.tool_choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(r.chat.tool_choice.name, "get_time");
  EXPECT_TRUE(r.chat.parsesToolCalls());
  EXPECT_TRUE(r.chat.stream);
  // echoed as sent
  EXPECT_EQ(r.tool_choice.dump(), R"({"type":"function","name":"get_time"})");
  EXPECT_EQ(r.tools[0]["name"], "get_weather");
}

TEST(ResponsesRequestTest, TextFormatIsChatsResponseFormat) {
  ResponsesRequest schema = parseResponsesOk(
      R"({"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"p","strict":true,)"
      R"("schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}})");
  EXPECT_NE(schema.chat.sampling.grammar.find("root"), std::string::npos) << schema.chat.sampling.grammar;
  ResponsesRequest object = parseResponsesOk(R"({"model":"m","input":"hi","text":{"format":{"type":"json_object"}}})");
  EXPECT_FALSE(object.chat.sampling.grammar.empty());
  ResponsesRequest text = parseResponsesOk(R"({"model":"m","input":"hi","text":{"format":{"type":"text"}}})");
  EXPECT_TRUE(text.chat.sampling.grammar.empty());
}

TEST(ResponsesRequestTest, RefusesWhatItDoesNotDoNamingTheField) {
  struct Case {
    std::string fields, param, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"("previous_response_id":"resp_1")", "previous_response_id",
            "previous_response_id is not supported: this server does not store responses"},
           {R"("conversation":"conv_1")", "conversation", "does not store conversations"},
           {R"("background":true)", "background", "background responses are not supported"},
           {R"("text":{"format":{"type":"xml"}})", "text.format.type",
            "text.format.type must be text, json_object or json_schema, got 'xml'"},
           {R"("text":{"format":{"type":"json_schema","name":"x","schema":{"type":"string","pattern":"a+"}}})",
            "text.format.schema", "'pattern'"},
           {R"("max_output_tokens":0)", "max_output_tokens", "max_output_tokens must be in"},
           {R"("temperature":-1)", "temperature", "temperature must be a number >= 0"},
           {R"("tools":[{"type":"web_search"}])", "tools",
            "tools[0]: tools of type 'web_search' are not supported, only 'function'"},
           {R"("tools":[{"type":"function"}])", "tools", "tools[0].function.name must be a string"},
           {R"("tool_choice":{"type":"file_search"})", "tool_choice", "tool_choice must be"},
           {R"("tool_choice":"required")", "tool_choice", "needs tools"},
           {R"("truncation":"middle")", "truncation", "truncation must be"},
       }) {
    ApiError error = parseError(R"({"model":"m","input":"hi",)" + c.fields + "}");
    EXPECT_EQ(error.status, 400) << c.fields;
    EXPECT_EQ(error.param, c.param) << c.fields;
    EXPECT_NE(error.message.find(c.message), std::string::npos)
        << c.fields << "\n got: " << error.message;
  }
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model":"m"})", "input is required"},
           {R"({"model":"m","input":[]})", "input must be a string or a non-empty array"},
           {R"({"model":"m","input":[{"role":"tool","content":"x"}]})",
            "input[0].role must be one of user, assistant, system, developer, got 'tool'"},
           {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]})",
            "input[0].content[0]: content parts of type 'input_image' are not supported"},
           {R"({"model":"m","input":[{"type":"reasoning"}]})",
            "input[0]: input items of type 'reasoning' are not supported"},
           {R"({"model":"m","input":[{"type":"function_call","name":"f"}]})",
            "input[0].call_id must be a string"},
           {R"({"model":"m","input":[)" + [] {
              std::string items = R"({"role":"user","content":"x"})";
              for (int i = 0; i < GenerationRequest::kMaxMessages; ++i) items += R"(,{"role":"user","content":"x"})";
              return items;
            }() + "]}",
            "input may hold at most 4096 items, got 4097"},
       }) {
    ApiError error = parseError(body);
    EXPECT_EQ(error.param, "input") << body;
    EXPECT_NE(error.message.find(message), std::string::npos) << body << "\n got: " << error.message;
  }
  EXPECT_EQ(parseError(R"({"input":"hi"})").param, "model");
  EXPECT_NE(parseError("{").message.find("invalid JSON"), std::string::npos);
}

// the events of a stream, parsed: each "event: T\ndata: {...}\n\n".
std::vector<Json> events(const std::string& sse) {
  std::vector<Json> out;
  size_t at = 0;
  while ((at = sse.find("event: ", at)) != std::string::npos) {
    const size_t type_end = sse.find('\n', at);
    const std::string type = sse.substr(at + 7, type_end - at - 7);
    const size_t data = sse.find("data: ", type_end) + 6;
    const size_t end = sse.find("\n\n", data);
    Json json = Json::parse(sse.substr(data, end - data));
    EXPECT_EQ(json["type"], type);
    out.push_back(std::move(json));
    at = end;
  }
  return out;
}

std::vector<std::string> types(const std::vector<Json>& events) {
  std::vector<std::string> out;
  for (const Json& e : events) out.push_back(e["type"]);
  return out;
}

TEST(ResponsesOutputTest, StreamsTextAsTypedNumberedEventsEndingWithTheCompletedResponse) {
  ResponsesRequest request = parseResponsesOk(R"({"model":"m","input":"hi","stream":true})");
  ResponsesOutput output(request, "resp_1", 1700000000, "m", /*stream=*/true);
  std::string sse = output.start();
  sse += output.add(ParsedText{"Once", {}});
  sse += output.add(ParsedText{" upon", {}});
  sse += output.finish(/*length=*/false, {5, 2, 0});
  const std::vector<Json> all = events(sse);
  EXPECT_EQ(types(all), (std::vector<std::string>{
                            "response.created", "response.in_progress",
                            "response.output_item.added", "response.content_part.added",
                            "response.output_text.delta", "response.output_text.delta",
                            "response.output_text.done", "response.content_part.done",
                            "response.output_item.done", "response.completed"}));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i]["sequence_number"], i);
  EXPECT_EQ(all[0]["response"]["status"], "in_progress");
  EXPECT_EQ(all[4]["delta"], "Once");
  EXPECT_EQ(all[4]["item_id"], all[2]["item"]["id"]);
  EXPECT_EQ(all[6]["text"], "Once upon");
  const Json& done = all.back()["response"];
  EXPECT_EQ(done["id"], "resp_1");
  EXPECT_EQ(done["object"], "response");
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["type"], "message");
  EXPECT_EQ(done["output"][0]["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Once upon");
  EXPECT_EQ(done["usage"].dump(),
            R"({"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,)"
            R"("output_tokens_details":{"reasoning_tokens":0},"total_tokens":7})");
  EXPECT_EQ(done["store"], true);
  EXPECT_EQ(Json::parse(output.body()), done);
}

TEST(ResponsesOutputTest, ToolCallsBecomeFunctionCallItemsAfterTheText) {
  ResponsesRequest request = parseResponsesOk(
      R"({"model":"m","input":"hi","tools":[{"type":"function","name":"f"}]})");
  ResponsesOutput output(request, "resp_2", 1, "m", /*stream=*/true);
  std::string sse = output.start();
  sse += output.add(ParsedText{"Checking.", {{0, "call_a", "f", "{\"x\""}}});
  sse += output.add(ParsedText{"", {{0, "", "", ": 1}"}}});
  sse += output.finish(/*length=*/false, {3, 9, 0});
  const std::vector<Json> all = events(sse);
  EXPECT_EQ(types(all), (std::vector<std::string>{
                            "response.created", "response.in_progress",
                            "response.output_item.added", "response.content_part.added",
                            "response.output_text.delta", "response.output_text.done",
                            "response.content_part.done", "response.output_item.done",
                            "response.output_item.added", "response.function_call_arguments.delta",
                            "response.function_call_arguments.delta",
                            "response.function_call_arguments.done", "response.output_item.done",
                            "response.completed"}));
  EXPECT_EQ(all[8]["output_index"], 1);
  EXPECT_EQ(all[8]["item"]["call_id"], "call_a");
  EXPECT_EQ(all[8]["item"]["name"], "f");
  EXPECT_EQ(all[11]["arguments"], "{\"x\": 1}");
  const Json& items = all.back()["response"]["output"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].dump().find(R"("type":"function_call","status":"completed","call_id":"call_a","name":"f","arguments":"{\"x\": 1}")") != std::string::npos, true)
      << items[1].dump();
}

TEST(ResponsesOutputTest, MaxOutputTokensMakesItIncompleteAndNothingStreamsWithoutStream) {
  ResponsesRequest request = parseResponsesOk(R"({"model":"m","input":"hi","max_output_tokens":2})");
  ResponsesOutput output(request, "resp_3", 1, "m", /*stream=*/false);
  EXPECT_EQ(output.start(), "");
  EXPECT_EQ(output.add(ParsedText{"ab", {}}), "");
  EXPECT_EQ(output.finish(/*length=*/true, {1, 2, 0}), "");
  const Json body = Json::parse(output.body());
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(body["max_output_tokens"], 2);
  EXPECT_EQ(body["output"][0]["content"][0]["text"], "ab");
}

TEST(ResponsesOutputTest, EchoesTheTextFormatItEnforced) {
  const auto echoed = [](const std::string& format) {
    ResponsesRequest request =
        parseResponsesOk(R"({"model":"m","input":"hi")" + format + "}");
    ResponsesOutput output(request, "resp_5", 1, "m", /*stream=*/true);
    const std::string created = output.start();
    output.finish(/*length=*/false, {1, 1, 0});
    // the streamed response.created carries the same format as the body
    const Json first = Json::parse(created.substr(created.find("data: ") + 6,
                                                  created.find('\n', created.find("data: ")) -
                                                      created.find("data: ") - 6));
    EXPECT_EQ(first["response"]["text"], Json::parse(output.body())["text"]);
    return Json::parse(output.body())["text"]["format"];
  };
  EXPECT_EQ(echoed(""), Json::parse(R"({"type":"text"})"));
  EXPECT_EQ(echoed(R"(,"text":{"format":{"type":"text"}})"), Json::parse(R"({"type":"text"})"));
  EXPECT_EQ(echoed(R"(,"text":{"format":{"type":"json_object"}})"),
            Json::parse(R"({"type":"json_object"})"));
  const Json schema = Json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  const Json format = echoed(R"(,"text":{"format":{"type":"json_schema","name":"point",)"
                             R"("strict":true,"schema":)" + schema.dump() + "}}");
  EXPECT_EQ(format["type"], "json_schema");
  EXPECT_EQ(format["name"], "point");
  EXPECT_EQ(format["strict"], true);
  EXPECT_EQ(format["schema"], schema);
}

TEST(ResponsesOutputTest, AnEmptyAnswerIsStillOneEmptyMessage) {
  ResponsesRequest request = parseResponsesOk(R"({"model":"m","input":"hi"})");
  ResponsesOutput output(request, "resp_4", 1, "m", /*stream=*/false);
  output.finish(/*length=*/false, {1, 1, 0});
  const Json body = Json::parse(output.body());
  ASSERT_EQ(body["output"].size(), 1u);
  EXPECT_EQ(body["output"][0]["content"][0]["text"], "");
}

}  // namespace
}  // namespace tandem::openai
