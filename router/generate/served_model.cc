#include "router/generate/served_model.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_file.h"

namespace tandem::router {
namespace {

// for models without a template: base models continue the text.
constexpr const char* kPlainTemplate =
    "{{ bos_token }}{% for message in messages %}{{ message['content'] }}"
    "{% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}";

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// the model's own template: tokenizer_config.json of an HF dir, or the
// GGUF's tokenizer.chat_template. NotFound when it has none.
absl::StatusOr<chat::ChatTemplatePtr> modelTemplate(const std::string& path) {
  if (!endsWith(path, ".gguf")) return chat::ChatTemplate::fromHfDir(path);
  ASSIGN_OR_RETURN(auto gguf, model::GgufFile::open(path));
  absl::StatusOr<std::string_view> source = gguf->getString("tokenizer.chat_template");
  if (!source.ok()) return absl::NotFoundError("the GGUF file has no chat template");
  return chat::ChatTemplate::parse(std::string(*source));
}

std::string tokenText(const tokenizer::Tokenizer& tok, std::optional<int32_t> id) {
  return id ? tok.tokenBytes(*id) : std::string();
}

}  // namespace

absl::StatusOr<ServedModelPtr> ServedModel::load(const std::string& path, std::string name,
                                                 int max_model_len,
                                                 const std::string& chat_template_file) {
  ServedModelPtr m(new ServedModel());
  m->path_ = path;
  if (name.empty()) {
    std::filesystem::path p(path);
    if (!p.has_filename()) p = p.parent_path();
    name = p.stem().string();
  }
  m->name_ = std::move(name);
  m->max_model_len_ = max_model_len;
  ASSIGN_OR_RETURN(m->tokenizer_, tokenizer::Tokenizer::load(path));

  if (!chat_template_file.empty()) {
    ASSIGN_OR_RETURN(std::string source, readFile(chat_template_file));
    ASSIGN_OR_RETURN(m->template_, chat::ChatTemplate::parse(source));
  } else {
    absl::StatusOr<chat::ChatTemplatePtr> own = modelTemplate(path);
    if (own.ok()) {
      m->template_ = std::move(*own);
    } else if (absl::IsNotFound(own.status())) {
      ASSIGN_OR_RETURN(m->template_, chat::ChatTemplate::parse(kPlainTemplate));
      m->fallback_template_ = true;
    } else {
      return own.status();
    }
  }
  if (!m->fallback_template_) {
    m->tool_call_family_ = openai::detectToolCallFamily(m->template_->source());
  }
  for (const std::string& marker : openai::toolCallMarkerTokens(m->tool_call_family_)) {
    std::optional<int32_t> id = m->tokenizer_->tokenToId(marker);
    if (id && m->tokenizer_->isSpecial(*id)) m->tool_call_marker_ids_.push_back(*id);
  }
  // an HF dir's template already knows its tokens; give the others ours.
  if (m->fallback_template_ || endsWith(path, ".gguf") || !chat_template_file.empty()) {
    m->template_->setSpecialTokens(tokenText(*m->tokenizer_, m->tokenizer_->bosId()),
                                   tokenText(*m->tokenizer_, m->tokenizer_->eosId()));
  }
  return m;
}

std::vector<int32_t> ServedModel::promptTokens(const openai::Prompt& prompt) const {
  if (prompt.is_tokens) return prompt.token_ids;
  return tokenizer_->encode(prompt.text, /*add_special=*/true);
}

absl::StatusOr<std::string> ServedModel::chatText(const openai::GenerationRequest& request) const {
  return template_->render(request.messages, request.tools,
                           request.add_generation_prompt && !request.continue_final_message,
                           request.chat_template_kwargs);
}

absl::StatusOr<std::vector<int32_t>> ServedModel::chatTokens(
    const openai::GenerationRequest& request) const {
  ASSIGN_OR_RETURN(std::string text, chatText(request));
  return tokenizer_->encode(text, /*add_special=*/false);
}

}  // namespace tandem::router
