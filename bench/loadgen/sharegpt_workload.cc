#include "bench/loadgen/sharegpt_workload.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::bench {
namespace {

// "human"/"user" -> true, "gpt"/"assistant"/"chatgpt"/"bard" -> false.
std::optional<bool> isHuman(const nlohmann::json& turn, std::string* text) {
  if (!turn.is_object()) return std::nullopt;
  std::string who;
  if (auto f = turn.find("from"); f != turn.end() && f->is_string()) who = f->get<std::string>();
  if (auto f = turn.find("role"); f != turn.end() && f->is_string()) who = f->get<std::string>();
  const nlohmann::json* value = nullptr;
  if (auto f = turn.find("value"); f != turn.end() && f->is_string()) value = &*f;
  if (auto f = turn.find("content"); f != turn.end() && f->is_string()) value = &*f;
  if (value == nullptr) return std::nullopt;
  *text = value->get<std::string>();
  if (who == "human" || who == "user") return true;
  if (who == "gpt" || who == "assistant" || who == "chatgpt" || who == "bard") return false;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::vector<ShareGptPair>> parseShareGpt(const std::string& text, const std::string& name) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(name, ": not valid JSON"));
  if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat(name, ": expected a JSON array of conversations"));
  std::vector<ShareGptPair> out;
  for (const auto& conv : j) {
    if (!conv.is_object()) continue;
    auto turns = conv.find("conversations");
    if (turns == conv.end()) turns = conv.find("messages");
    if (turns == conv.end() || !turns->is_array()) continue;
    // the first human message followed directly by a reply.
    for (size_t i = 0; i + 1 < turns->size(); ++i) {
      ShareGptPair pair;
      std::optional<bool> a = isHuman((*turns)[i], &pair.prompt);
      std::optional<bool> b = isHuman((*turns)[i + 1], &pair.reply);
      if (a == true && b == false) {
        if (!pair.prompt.empty() && !pair.reply.empty()) out.push_back(std::move(pair));
        break;
      }
    }
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no conversation with a prompt and a reply"));
  return out;
}

absl::StatusOr<WorkloadPtr> ShareGptWorkload::create(const std::string& path, const WorkloadOptions& options,
                                                     const WorkloadContext& ctx) {
  if (ctx.tokenizer == nullptr) return absl::InvalidArgumentError("sharegpt needs a tokenizer");
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  ASSIGN_OR_RETURN(auto pairs, parseShareGpt(text, path));
  return WorkloadPtr(new ShareGptWorkload(path, options, ctx, std::move(pairs)));
}

std::optional<BenchRequest> ShareGptWorkload::next() {
  while (next_pair_ < pairs_.size()) {
    const ShareGptPair& pair = pairs_[next_pair_++];
    int in = static_cast<int>(ctx_.tokenizer->encode(pair.prompt, true).size());
    if (options_.max_input_len > 0 && in > options_.max_input_len) continue;
    int out = options_.sharegpt_output_len > 0
                  ? options_.sharegpt_output_len
                  : static_cast<int>(ctx_.tokenizer->encode(pair.reply, false).size());
    if (options_.max_output_len > 0) out = std::min(out, options_.max_output_len);
    BenchRequest req;
    req.index = index_++;
    req.prompt_text = pair.prompt;
    req.input_tokens = in;
    req.max_tokens = std::max(out, 1);
    return req;
  }
  return std::nullopt;
}

nlohmann::json ShareGptWorkload::describe() const {
  return {{"kind", "sharegpt"},
          {"file", path_},
          {"conversations", pairs_.size()},
          {"output_len", options_.sharegpt_output_len},
          {"max_input_len", options_.max_input_len},
          {"max_output_len", options_.max_output_len}};
}

}  // namespace tandem::bench
