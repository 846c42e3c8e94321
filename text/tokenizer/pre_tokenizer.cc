#include "text/tokenizer/pre_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {
namespace {

absl::StatusOr<SplitRegex::Behavior> parseBehavior(const std::string& name) {
  using B = SplitRegex::Behavior;
  if (name == "Isolated") return B::kIsolated;
  if (name == "Removed") return B::kRemoved;
  if (name == "MergedWithPrevious") return B::kMergedWithPrevious;
  if (name == "MergedWithNext") return B::kMergedWithNext;
  if (name == "Contiguous") return B::kContiguous;
  return absl::InvalidArgumentError(absl::StrCat("unknown Split behavior \"", name, "\""));
}

}  // namespace

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

absl::StatusOr<PreTokenizer> PreTokenizer::fromJson(const nlohmann::json& json) {
  PreTokenizer p;
  if (!json.is_null()) RETURN_IF_ERROR(p.addStep(json));
  return p;
}

absl::StatusOr<PreTokenizer> PreTokenizer::byteLevel(std::string_view pattern) {
  PreTokenizer p;
  Step split{Kind::kSplit};
  ASSIGN_OR_RETURN(split.regex, SplitRegex::create(pattern, SplitRegex::Behavior::kIsolated, false));
  p.steps_.push_back(std::move(split));
  p.steps_.push_back(Step{Kind::kByteLevel});
  p.byte_level_ = true;
  return p;
}

absl::Status PreTokenizer::addStep(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
    return absl::InvalidArgumentError("pre_tokenizer without a type");
  }
  const std::string type = json["type"].get<std::string>();
  Step step;
  if (type == "Sequence") {
    for (const auto& sub : json.value("pretokenizers", nlohmann::json::array())) {
      RETURN_IF_ERROR(addStep(sub));
    }
    return absl::OkStatus();
  } else if (type == "Split") {
    step.kind = Kind::kSplit;
    ASSIGN_OR_RETURN(auto behavior, parseBehavior(json.value("behavior", "Isolated")));
    bool invert = json.value("invert", false);
    const auto& pattern = json.value("pattern", nlohmann::json::object());
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      ASSIGN_OR_RETURN(step.regex,
                       SplitRegex::create(pattern["Regex"].get<std::string>(), behavior, invert));
    } else if (pattern.contains("String") && pattern["String"].is_string()) {
      ASSIGN_OR_RETURN(step.regex, SplitRegex::createLiteral(pattern["String"].get<std::string>(),
                                                             behavior, invert));
    } else {
      return absl::InvalidArgumentError("Split pre_tokenizer without a pattern");
    }
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
    step.add_prefix_space = json.value("add_prefix_space", false);
    if (json.value("use_regex", true)) {
      ASSIGN_OR_RETURN(step.regex,
                       SplitRegex::create(kGpt2Pattern, SplitRegex::Behavior::kIsolated, false));
    }
    byte_level_ = true;
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    step.replacement = json.value("replacement", "\xE2\x96\x81");
    step.prepend_scheme = json.value("prepend_scheme", json.value("add_prefix_space", true)
                                                           ? "always" : "never");
    step.metaspace_split = json.value("split", true);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer type \"", type, "\""));
  }
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

bool PreTokenizer::keepsEveryByte() const {
  for (const Step& step : steps_) {
    if (step.regex != nullptr && step.regex->dropsText()) return false;
    if (step.kind == Kind::kMetaspace && step.replacement.empty()) return false;
  }
  return true;
}

std::vector<std::string> PreTokenizer::run(std::string_view text, bool first) const {
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> next;
  std::vector<std::string_view> parts;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      switch (step.kind) {
        case Kind::kSplit:
          parts.clear();
          step.regex->split(piece, &parts);
          for (std::string_view p : parts) next.emplace_back(p);
          break;
        case Kind::kByteLevel: {
          // hf adds the prefix space to every piece the earlier steps made
          if (step.add_prefix_space && !piece.empty() && piece[0] != ' ') piece.insert(0, " ");
          parts.clear();
          if (step.regex != nullptr) {
            step.regex->split(piece, &parts);
          } else {
            parts.push_back(piece);
          }
          for (std::string_view p : parts) next.push_back(byteLevelEncode(p));
          break;
        }
        case Kind::kMetaspace: {
          std::string s = absl::StrReplaceAll(piece, {{" ", step.replacement}});
          bool prepend = step.prepend_scheme == "always" || (step.prepend_scheme == "first" && first);
          if (prepend && s.rfind(step.replacement, 0) != 0) s.insert(0, step.replacement);
          if (!step.metaspace_split) {
            next.push_back(std::move(s));
            break;
          }
          // split before each replacement character, keeping it
          size_t start = 0;
          for (size_t pos = s.find(step.replacement, 1); pos != std::string::npos;
               pos = s.find(step.replacement, pos + 1)) {
            if (pos > start) next.push_back(s.substr(start, pos - start));
            start = pos;
          }
          if (start < s.size()) next.push_back(s.substr(start));
          break;
        }
      }
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace tandem::tokenizer
