#include "text/chat/py_json.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::chat {
namespace {

void appendJsonString(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

class Dumper {
 public:
  explicit Dumper(const PyJsonOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
    key_sep_ = o.key_separator ? *o.key_separator : ": ";
  }

  absl::Status dump(const Value& v, int level, std::string& out) {
    if (level > 512) return absl::InvalidArgumentError("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return absl::OkStatus();
      case Value::Kind::kBool: out += v.asBool() ? "true" : "false"; return absl::OkStatus();
      case Value::Kind::kInt: out += std::to_string(v.asInt()); return absl::OkStatus();
      case Value::Kind::kFloat: {
        double f = v.asDouble();
        if (std::isnan(f)) {
          out += "NaN";
        } else if (std::isinf(f)) {
          out += f > 0 ? "Infinity" : "-Infinity";
        } else {
          out += formatPyFloat(f);
        }
        return absl::OkStatus();
      }
      case Value::Kind::kString: appendJsonString(out, v.str()); return absl::OkStatus();
      case Value::Kind::kList:
      case Value::Kind::kTuple: {
        if (v.items().empty()) {
          out += "[]";
          return absl::OkStatus();
        }
        out.push_back('[');
        for (size_t i = 0; i < v.items().size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1, out);
          RETURN_IF_ERROR(dump(v.items()[i], level + 1, out));
        }
        newline(level, out);
        out.push_back(']');
        return absl::OkStatus();
      }
      case Value::Kind::kDict: {
        if (v.dictRef().items.empty()) {
          out += "{}";
          return absl::OkStatus();
        }
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.dictRef().items) items.push_back(&kv);
        if (o_.sort_keys) {
          std::stable_sort(items.begin(), items.end(),
                           [](auto* a, auto* b) { return a->first < b->first; });
        }
        out.push_back('{');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1, out);
          appendJsonString(out, items[i]->first);
          out += key_sep_;
          RETURN_IF_ERROR(dump(items[i]->second, level + 1, out));
        }
        newline(level, out);
        out.push_back('}');
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("Object of type ", v.typeName(), " is not JSON serializable"));
    }
  }

 private:
  void newline(int level, std::string& out) const {
    if (!o_.indent) return;
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  const PyJsonOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

absl::StatusOr<std::string> pyJsonDumps(const Value& v, const PyJsonOptions& options) {
  std::string out;
  RETURN_IF_ERROR(Dumper(options).dump(v, 0, out));
  return out;
}

}  // namespace tandem::chat
