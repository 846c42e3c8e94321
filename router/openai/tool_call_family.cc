#include "router/openai/tool_call_family.h"

namespace tandem::openai {

ToolCallFamily detectToolCallFamily(std::string_view chat_template) {
  // the most specific markers first: a Hermes template may mention JSON
  // "parameters" in its instructions, a Llama one never writes <tool_call>.
  if (chat_template.find("<tool_call>") != std::string_view::npos) return ToolCallFamily::kHermes;
  if (chat_template.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFamily::kMistral;
  const bool llama_headers = chat_template.find("<|start_header_id|>") != std::string_view::npos;
  const bool json_calls = chat_template.find("\"parameters\"") != std::string_view::npos ||
                          chat_template.find("<|python_tag|>") != std::string_view::npos;
  if (llama_headers && json_calls) return ToolCallFamily::kLlama3Json;
  return ToolCallFamily::kJson;
}

const char* toolCallFamilyName(ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::kJson: return "json";
    case ToolCallFamily::kLlama3Json: return "llama3_json";
    case ToolCallFamily::kHermes: return "hermes";
    case ToolCallFamily::kMistral: return "mistral";
  }
  return "json";
}

std::vector<std::string> toolCallMarkerTokens(ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::kLlama3Json: return {"<|python_tag|>"};
    case ToolCallFamily::kMistral: return {"[TOOL_CALLS]"};
    case ToolCallFamily::kHermes: return {"<tool_call>", "</tool_call>"};
    case ToolCallFamily::kJson: break;
  }
  return {};
}

}  // namespace tandem::openai
