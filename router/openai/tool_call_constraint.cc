#include "router/openai/tool_call_constraint.h"

#include "router/openai/tool_request.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// one call of the function `name` in the family's object shape.
Json callSchema(ToolCallFamily family, const Json& tools, const std::string& name) {
  const char* arguments_key =
      family == ToolCallFamily::kLlama3Json ? "parameters" : "arguments";
  Json schema;
  schema["type"] = "object";
  schema["properties"]["name"] = Json{{"const", name}};
  schema["properties"][arguments_key] = toolParameters(tools, name);
  schema["required"] = Json::array({"name", arguments_key});
  schema["additionalProperties"] = false;
  return schema;
}

}  // namespace

std::optional<ToolCallConstraint> toolCallConstraint(ToolCallFamily family, const Json& tools,
                                                     const ToolChoice& choice) {
  if (!choice.forcesCall() || !tools.is_array() || tools.empty()) return std::nullopt;
  ToolCallConstraint constraint;
  if (choice.mode == ToolChoiceMode::kNamed) {
    constraint.schema = callSchema(family, tools, choice.name);
  } else if (tools.size() == 1) {
    constraint.schema = callSchema(family, tools, tools[0]["function"]["name"].get<std::string>());
  } else {
    Json any = Json::array();
    for (const Json& tool : tools) {
      any.push_back(callSchema(family, tools, tool["function"]["name"].get<std::string>()));
    }
    constraint.schema = Json{{"anyOf", std::move(any)}};
  }
  switch (family) {
    case ToolCallFamily::kHermes:
      constraint.prefix = "<tool_call>\n";
      constraint.suffix = "\n</tool_call>";
      break;
    case ToolCallFamily::kMistral:
      constraint.prefix = "[TOOL_CALLS] [";
      constraint.suffix = "]";
      break;
    case ToolCallFamily::kLlama3Json:
    case ToolCallFamily::kJson:
      break;
  }
  return constraint;
}

}  // namespace tandem::openai
