#include "router/openai/tool_call_constraint.h"

#include <string>
#include <vector>

#include "router/openai/tool_request.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// the parameters' local $refs ("#", "#/$defs/...") point into the
// parameters, which the call schema nests at `base` ("#/properties/
// arguments"): each becomes base + the rest, so it still points at the
// same node. Only schema positions are rewritten (a const or enum value is
// data); walked with an explicit stack.
void rebaseRefs(Json& parameters, const std::string& base) {
  std::vector<Json*> pending = {&parameters};
  while (!pending.empty()) {
    Json& schema = *pending.back();
    pending.pop_back();
    if (!schema.is_object()) continue;
    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      const std::string& target = ref->get_ref<const std::string&>();
      if (!target.empty() && target[0] == '#') *ref = base + target.substr(1);
    }
    for (const char* key : {"additionalProperties", "items"}) {
      if (auto it = schema.find(key); it != schema.end()) pending.push_back(&*it);
    }
    for (const char* key : {"properties", "$defs", "definitions", "prefixItems", "anyOf", "oneOf", "allOf"}) {
      auto it = schema.find(key);
      if (it == schema.end() || !it->is_structured()) continue;
      for (Json& sub : *it) pending.push_back(&sub);
    }
  }
}

// one call of the function `name` in the family's object shape, at `base`
// in the whole constraint schema ("#", or "#/anyOf/2").
Json callSchema(ToolCallFamily family, const Json& tools, const std::string& name,
                const std::string& base) {
  const char* arguments_key =
      family == ToolCallFamily::kLlama3Json ? "parameters" : "arguments";
  Json schema;
  schema["type"] = "object";
  schema["properties"]["name"] = Json{{"const", name}};
  Json parameters = toolParameters(tools, name);
  rebaseRefs(parameters, base + "/properties/" + arguments_key);
  schema["properties"][arguments_key] = std::move(parameters);
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
    constraint.schema = callSchema(family, tools, choice.name, "#");
  } else if (tools.size() == 1) {
    constraint.schema =
        callSchema(family, tools, tools[0]["function"]["name"].get<std::string>(), "#");
  } else {
    Json any = Json::array();
    for (const Json& tool : tools) {
      const std::string base = "#/anyOf/" + std::to_string(any.size());
      any.push_back(callSchema(family, tools, tool["function"]["name"].get<std::string>(), base));
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
