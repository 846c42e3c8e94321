#include "text/chat/chat_template.h"

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "text/chat/builtins.h"
#include "text/chat/lexer.h"
#include "text/chat/parser.h"
#include "text/chat/renderer.h"
#include "text/chat/value.h"

namespace tandem::chat {

struct ChatTemplate::Impl {
  std::string normalized;
  StmtList root;
};

namespace {

// special tokens are strings or AddedToken objects {"content": ...}.
std::string tokenText(const nlohmann::ordered_json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return "";
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source) : source_(std::move(source)) {}

ChatTemplate::~ChatTemplate() = default;

absl::StatusOr<ChatTemplatePtr> ChatTemplate::parse(const std::string& source) {
  auto impl = std::make_unique<Impl>();
  impl->normalized = normalizeTemplateSource(source);
  ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenizeTemplate(impl->normalized));
  Parser parser(impl->normalized, std::move(tokens));
  ASSIGN_OR_RETURN(impl->root, parser.parseTemplate());
  ChatTemplatePtr t(new ChatTemplate(source));
  t->impl_ = std::move(impl);
  return t;
}

absl::StatusOr<ChatTemplatePtr> ChatTemplate::fromHfDir(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, readFile(absl::StrCat(dir, "/tokenizer_config.json")));
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer_config.json: ", e.what()));
  }
  if (!config.is_object()) return absl::InvalidArgumentError("tokenizer_config.json is not an object");
  std::string source;
  auto it = config.find("chat_template");
  if (it != config.end() && it->is_string()) {
    source = it->get<std::string>();
  } else if (it != config.end() && it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        source = entry["template"].get<std::string>();
      }
    }
    if (source.empty()) return absl::NotFoundError("chat_template list has no \"default\" entry");
  } else {
    // newer transformers save the template beside the config
    absl::StatusOr<std::string> jinja = readFile(absl::StrCat(dir, "/chat_template.jinja"));
    if (!jinja.ok()) return absl::NotFoundError(absl::StrCat("no chat_template in ", dir));
    source = *std::move(jinja);
  }
  ASSIGN_OR_RETURN(ChatTemplatePtr t, parse(source));
  t->setSpecialTokens(tokenText(config, "bos_token"), tokenText(config, "eos_token"));
  return t;
}

void ChatTemplate::setSpecialTokens(std::string bos_token, std::string eos_token) {
  bos_token_ = std::move(bos_token);
  eos_token_ = std::move(eos_token);
}

absl::StatusOr<std::string> ChatTemplate::render(const nlohmann::json& messages,
                                                 const nlohmann::json& tools,
                                                 bool add_generation_prompt,
                                                 const nlohmann::json& extra) const {
  // nlohmann::json has already sorted object keys; carry them over as they are
  try {
    return render(nlohmann::ordered_json::parse(messages.dump()),
                  nlohmann::ordered_json::parse(tools.dump()), add_generation_prompt,
                  nlohmann::ordered_json::parse(extra.dump()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("render: ", e.what()));
  }
}

absl::StatusOr<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                                 const nlohmann::ordered_json& tools,
                                                 bool add_generation_prompt,
                                                 const nlohmann::ordered_json& extra) const {
  ValueDict globals = makeGlobals();
  if (!bos_token_.empty()) globals.set("bos_token", Value(bos_token_));
  if (!eos_token_.empty()) globals.set("eos_token", Value(eos_token_));
  globals.set("messages", Value::fromJson(messages));
  globals.set("tools", Value::fromJson(tools));
  globals.set("documents", Value::none());
  globals.set("add_generation_prompt", Value(add_generation_prompt));
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) globals.set(k, Value::fromJson(v));
  }
  Renderer renderer(impl_->root, impl_->normalized);
  return renderer.render(globals);
}

}  // namespace tandem::chat
