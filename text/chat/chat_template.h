// Renders a model's chat template (Jinja, as in tokenizer_config.json or a
// GGUF's tokenizer.chat_template) exactly as HF transformers does:
// jinja2's sandboxed environment with trim_blocks and lstrip_blocks,
// variables messages, tools, add_generation_prompt, bos_token, eos_token and
// any extra ones (enable_thinking, ...).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::chat {

class ChatTemplate;
using ChatTemplatePtr = std::unique_ptr<ChatTemplate>;

class ChatTemplate {
 public:
  // parses `source`. A syntax error is InvalidArgument with line and column.
  static absl::StatusOr<ChatTemplatePtr> parse(const std::string& source);

  // reads chat_template (a string, or the list-of-named-templates form, of
  // which "default" is taken), bos_token and eos_token from an HF
  // tokenizer_config.json in `dir`; a template missing there is read from
  // chat_template.jinja. NotFound when there is no template, InvalidArgument
  // when the config is not valid JSON or the template does not parse.
  static absl::StatusOr<ChatTemplatePtr> fromHfDir(const std::string& dir);

  ~ChatTemplate();

  // renders for `messages` (a JSON array of {role, content, ...}). `tools`
  // may be null. `extra` is a JSON object of further variables. Errors from
  // raise_exception() or evaluation are InvalidArgument with the message.
  absl::StatusOr<std::string> render(const nlohmann::json& messages,
                                     const nlohmann::json& tools,
                                     bool add_generation_prompt,
                                     const nlohmann::json& extra = nlohmann::json::object()) const;

  // as above, keeping the key order of JSON objects: tojson prints keys in
  // the order the client sent them, as HF does, so callers that parsed the
  // request with ordered_json should use this overload.
  absl::StatusOr<std::string> render(
      const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
      bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  // bos_token and eos_token as templates see them; an empty token is left
  // undefined, as HF leaves a null one out of the template variables.
  void setSpecialTokens(std::string bos_token, std::string eos_token);
  const std::string& source() const { return source_; }

 private:
  struct Impl;
  explicit ChatTemplate(std::string source);

  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::chat
