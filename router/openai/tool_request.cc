#include "router/openai/tool_request.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// arguments nesting deeper stay a string (printing JSON recurses per level).
constexpr int kMaxArgumentsDepth = 64;

// OpenAI's rule for function names: a-z, A-Z, 0-9, underscores and dashes
// (and dots, which vLLM and real tool sets use), at most 64 characters.
bool validName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool hasTool(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const Json& tool : tools) {
    if (tool["function"]["name"] == name) return true;
  }
  return false;
}

// one tool: the first problem, or "".
std::string toolProblem(const Json& tool, size_t i) {
  const std::string where = absl::StrCat("tools[", i, "]");
  if (!tool.is_object()) return absl::StrCat(where, " must be an object");
  auto type = tool.find("type");
  if (type == tool.end() || !type->is_string()) {
    return absl::StrCat(where, ".type must be \"function\"");
  }
  if (*type != "function") {
    return absl::StrCat(where, ": tools of type '", type->get<std::string>(),
                        "' are not supported, only 'function'");
  }
  auto function = tool.find("function");
  if (function == tool.end() || !function->is_object()) {
    return absl::StrCat(where, ".function must be an object");
  }
  auto name = function->find("name");
  if (name == function->end() || !name->is_string()) {
    return absl::StrCat(where, ".function.name must be a string");
  }
  if (!validName(name->get<std::string>())) {
    return absl::StrCat(where, ".function.name must be 1 to 64 characters of a-z, A-Z, 0-9, _, "
                               "- or ., got ", name->dump());
  }
  auto description = function->find("description");
  if (description != function->end() && !description->is_null() && !description->is_string()) {
    return absl::StrCat(where, ".function.description must be a string");
  }
  auto parameters = function->find("parameters");
  if (parameters != function->end() && !parameters->is_null() && !parameters->is_object()) {
    return absl::StrCat(where, ".function.parameters must be a JSON schema object");
  }
  auto strict = function->find("strict");
  if (strict != function->end() && !strict->is_null() && !strict->is_boolean()) {
    return absl::StrCat(where, ".function.strict must be a boolean");
  }
  return "";
}

}  // namespace

void checkTools(const Json& tools, FieldReader& reader) {
  if (tools.is_null()) return;
  if (!tools.is_array()) {
    reader.fail("tools", absl::StrCat("tools must be an array, got ", tools.type_name()));
    return;
  }
  if (tools.size() > static_cast<size_t>(kMaxTools)) {
    reader.fail("tools", absl::StrCat("tools may hold at most ", kMaxTools, " tools, got ",
                                      tools.size()));
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (std::string problem = toolProblem(tools[i], i); !problem.empty()) {
      reader.fail("tools", std::move(problem));
      return;
    }
    const std::string name = tools[i]["function"]["name"].get<std::string>();
    if (!names.insert(name).second) {
      reader.fail("tools", absl::StrCat("tools[", i, "]: the function name '", name,
                                        "' is used twice"));
      return;
    }
  }
}

ToolChoice readToolChoice(const Json* value, const Json& tools, FieldReader& reader) {
  const bool have_tools = tools.is_array() && !tools.empty();
  ToolChoice choice{have_tools ? ToolChoiceMode::kAuto : ToolChoiceMode::kNone, ""};
  if (value == nullptr) return choice;
  if (value->is_string()) {
    const std::string& mode = value->get_ref<const std::string&>();
    if (mode == "none") {
      choice.mode = ToolChoiceMode::kNone;
    } else if (mode == "auto") {
      choice.mode = have_tools ? ToolChoiceMode::kAuto : ToolChoiceMode::kNone;
    } else if (mode == "required") {
      choice.mode = ToolChoiceMode::kRequired;
    } else {
      reader.fail("tool_choice", absl::StrCat("tool_choice must be \"none\", \"auto\", "
                                              "\"required\" or a function, got \"", mode, "\""));
      return choice;
    }
  } else if (value->is_object()) {
    auto type = value->find("type");
    auto function = value->find("function");
    const Json* name = nullptr;
    if (function != value->end() && function->is_object()) {
      auto n = function->find("name");
      if (n != function->end() && n->is_string()) name = &*n;
    }
    if (type == value->end() || *type != "function" || name == nullptr) {
      reader.fail("tool_choice", "tool_choice as an object must be {\"type\": \"function\", "
                                 "\"function\": {\"name\": ...}}");
      return choice;
    }
    choice.mode = ToolChoiceMode::kNamed;
    choice.name = name->get<std::string>();
  } else {
    reader.fail("tool_choice", absl::StrCat("tool_choice must be a string or an object, got ",
                                            value->type_name()));
    return choice;
  }
  if (choice.forcesCall() && !have_tools) {
    reader.fail("tool_choice", absl::StrCat("tool_choice ",
                                            choice.mode == ToolChoiceMode::kNamed
                                                ? absl::StrCat("naming '", choice.name, "'")
                                                : std::string("\"required\""),
                                            " needs tools, and the request has none"));
  } else if (choice.mode == ToolChoiceMode::kNamed && !hasTool(tools, choice.name)) {
    reader.fail("tool_choice", absl::StrCat("tool_choice names the function '", choice.name,
                                            "', which is not among the tools"));
  }
  return choice;
}

Json toolParameters(const Json& tools, const std::string& name) {
  if (tools.is_array()) {
    for (const Json& tool : tools) {
      const Json& function = tool["function"];
      if (function["name"] != name) continue;
      auto parameters = function.find("parameters");
      if (parameters != function.end() && parameters->is_object()) return *parameters;
    }
  }
  return Json{{"type", "object"}};
}

void parseToolCallArguments(Json& messages) {
  if (!messages.is_array()) return;
  for (Json& message : messages) {
    if (!message.is_object()) continue;
    auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array()) continue;
    for (Json& call : *calls) {
      if (!call.is_object()) continue;
      auto function = call.find("function");
      if (function == call.end() || !function->is_object()) continue;
      auto arguments = function->find("arguments");
      if (arguments == function->end() || !arguments->is_string()) continue;
      // the body's depth limit did not see inside the string: keep it here.
      bool too_deep = false;
      Json::parser_callback_t limit = [&too_deep](int depth, Json::parse_event_t event, Json&) {
        if (depth >= kMaxArgumentsDepth && (event == Json::parse_event_t::object_start ||
                                            event == Json::parse_event_t::array_start)) {
          too_deep = true;
          return false;
        }
        return true;
      };
      Json parsed = Json::parse(arguments->get_ref<const std::string&>(), limit,
                                /*allow_exceptions=*/false);
      if (parsed.is_object() && !too_deep) *arguments = std::move(parsed);
    }
  }
}

}  // namespace tandem::openai
