// The model as the router serves it: its public name, tokenizer, chat
// template and context length, and the turning of OpenAI prompts (text,
// token ids, chat messages) into token ids.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "router/openai/openai_request.h"
#include "router/openai/tool_call_family.h"
#include "text/chat/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::router {

class ServedModel;
using ServedModelPtr = std::unique_ptr<ServedModel>;

class ServedModel {
 public:
  // loads the tokenizer and chat template of the model at `path` (HF dir
  // or .gguf). `name` is the id clients use ("" = the file or directory
  // name without extension). `chat_template_file` overrides the model's
  // template; a model without one gets a plain template (BOS, then the
  // messages' contents joined by newlines: base models continue the text).
  static absl::StatusOr<ServedModelPtr> load(const std::string& path, std::string name,
                                             int max_model_len,
                                             const std::string& chat_template_file = "");

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  int maxModelLen() const { return max_model_len_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  // true when the model brought no chat template and the plain one is used.
  bool usesFallbackTemplate() const { return fallback_template_; }
  // how the model writes tool calls, told from its chat template (plain
  // JSON for the fallback template).
  openai::ToolCallFamily toolCallFamily() const { return tool_call_family_; }
  // the family's marker tokens that are special tokens (<|python_tag|>,
  // [TOOL_CALLS]): kept in the text a tool-call parser reads even when
  // special tokens are skipped.
  const std::vector<int32_t>& toolCallMarkerIds() const { return tool_call_marker_ids_; }
  // replaces the tokenizer with one of the same vocabulary (a test wraps
  // the real one, e.g. to hold encode() until it says so). Before serving.
  void setTokenizer(tokenizer::TokenizerPtr tokenizer) { tokenizer_ = std::move(tokenizer); }

  // the token ids of a completions prompt: text is tokenized with the
  // model's special tokens (BOS); token ids are taken as they are.
  std::vector<int32_t> promptTokens(const openai::Prompt& prompt) const;
  // renders a chat request's messages with the template (which writes the
  // special tokens itself). errors: InvalidArgument with the template's
  // message (raise_exception, bad message content, its work limits).
  absl::StatusOr<std::string> chatText(const openai::GenerationRequest& request) const;
  // chatText(), tokenized.
  absl::StatusOr<std::vector<int32_t>> chatTokens(const openai::GenerationRequest& request) const;

 private:
  ServedModel() = default;

  std::string name_;
  std::string path_;
  int max_model_len_ = 0;
  tokenizer::TokenizerPtr tokenizer_;
  chat::ChatTemplatePtr template_;
  bool fallback_template_ = false;
  openai::ToolCallFamily tool_call_family_ = openai::ToolCallFamily::kJson;
  std::vector<int32_t> tool_call_marker_ids_;
};

}  // namespace tandem::router
