#include "text/tokenizer/normalizer.h"

#include <algorithm>

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace tandem::tokenizer {
namespace {

std::string icuNormalize(std::string_view text, const icu::Normalizer2* (*get)(UErrorCode&)) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* norm = get(status);
  if (U_FAILURE(status)) return std::string(text);
  icu::UnicodeString src = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  // the common case is already normalized: skip the copy back.
  if (norm->isNormalized(src, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  icu::UnicodeString dst = norm->normalize(src, status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  dst.toUTF8String(out);
  return out;
}

bool isAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

Normalizer::Normalizer() = default;
Normalizer::~Normalizer() = default;
Normalizer::Normalizer(Normalizer&&) noexcept = default;
Normalizer& Normalizer::operator=(Normalizer&&) noexcept = default;

absl::StatusOr<Normalizer> Normalizer::fromJson(const nlohmann::json& json) {
  Normalizer n;
  if (!json.is_null()) RETURN_IF_ERROR(n.addStep(json));
  return n;
}

absl::Status Normalizer::addStep(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
    return absl::InvalidArgumentError("normalizer without a type");
  }
  const std::string type = json["type"].get<std::string>();
  Step step;
  if (type == "Sequence") {
    const auto& list = json.value("normalizers", nlohmann::json::array());
    for (const auto& sub : list) RETURN_IF_ERROR(addStep(sub));
    return absl::OkStatus();
  } else if (type == "NFC") {
    step.kind = Kind::kNfc;
  } else if (type == "NFD") {
    step.kind = Kind::kNfd;
  } else if (type == "NFKC") {
    step.kind = Kind::kNfkc;
  } else if (type == "NFKD") {
    step.kind = Kind::kNfkd;
  } else if (type == "Lowercase") {
    step.kind = Kind::kLowercase;
  } else if (type == "Prepend") {
    step.kind = Kind::kPrepend;
    step.content = json.value("prepend", "");
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    step.strip_left = json.value("strip_left", true);
    step.strip_right = json.value("strip_right", true);
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    step.content = json.value("content", "");
    const auto& pattern = json.value("pattern", nlohmann::json::object());
    if (pattern.contains("String") && pattern["String"].is_string()) {
      step.literal = pattern["String"].get<std::string>();
      if (step.literal.empty()) return absl::InvalidArgumentError("Replace with an empty pattern");
    } else if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      ASSIGN_OR_RETURN(step.regex, SplitRegex::create(pattern["Regex"].get<std::string>(),
                                                      SplitRegex::Behavior::kIsolated, false));
    } else {
      return absl::InvalidArgumentError("Replace normalizer without a pattern");
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unsupported normalizer type \"", type, "\""));
  }
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

size_t Normalizer::shrinkFactor() const {
  // the Unicode forms and Lowercase: see the header.
  constexpr size_t kUnicodeShrink = 4;
  // a factor past this is as good as none, and the product cannot overflow.
  constexpr size_t kCap = size_t{1} << 20;
  size_t factor = 1;
  for (const Step& step : steps_) {
    size_t f = 1;
    switch (step.kind) {
      case Kind::kNfc:
      case Kind::kNfd:
      case Kind::kNfkc:
      case Kind::kNfkd:
      case Kind::kLowercase: f = kUnicodeShrink; break;
      case Kind::kPrepend: break;
      case Kind::kStrip: return 0;
      case Kind::kReplace:
        if (step.regex != nullptr || step.content.empty()) return 0;
        f = (step.literal.size() + step.content.size() - 1) / step.content.size();
        break;
    }
    factor = std::min(factor * f, kCap);
  }
  return factor;
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kNfc: s = icuNormalize(s, &icu::Normalizer2::getNFCInstance); break;
      case Kind::kNfd: s = icuNormalize(s, &icu::Normalizer2::getNFDInstance); break;
      case Kind::kNfkc: s = icuNormalize(s, &icu::Normalizer2::getNFKCInstance); break;
      case Kind::kNfkd: s = icuNormalize(s, &icu::Normalizer2::getNFKDInstance); break;
      case Kind::kLowercase: {
        icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
        u.toLower();
        s.clear();
        u.toUTF8String(s);
        break;
      }
      case Kind::kPrepend:
        // hf prepends only to non-empty text
        if (!s.empty()) s = step.content + s;
        break;
      case Kind::kStrip: {
        size_t b = 0, e = s.size();
        if (step.strip_left) while (b < e && isAsciiSpace(s[b])) ++b;
        if (step.strip_right) while (e > b && isAsciiSpace(s[e - 1])) --e;
        s = s.substr(b, e - b);
        break;
      }
      case Kind::kReplace:
        if (step.regex == nullptr) {
          s = absl::StrReplaceAll(s, {{step.literal, step.content}});
        } else {
          s = step.regex->replaceAll(s, step.content);
        }
        break;
    }
  }
  return s;
}

}  // namespace tandem::tokenizer
