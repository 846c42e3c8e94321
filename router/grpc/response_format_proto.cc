#include "router/grpc/response_format_proto.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "router/openai/json_field.h"
#include "router/openai/response_format.h"

namespace tandem::router {

absl::StatusOr<std::string> requestGrammar(const tandem::v1::GenerateRequest& request) {
  const tandem::v1::ResponseFormat& format = request.response_format();
  switch (format.type()) {
    case tandem::v1::RESPONSE_FORMAT_TYPE_JSON_OBJECT:
      return openai::grammarForJsonObject();
    case tandem::v1::RESPONSE_FORMAT_TYPE_JSON_SCHEMA: {
      // the body's depth limit never saw inside this string: applied here.
      std::variant<nlohmann::ordered_json, std::string> schema =
          openai::parseBoundedJson(format.schema());
      if (auto* problem = std::get_if<std::string>(&schema)) {
        return absl::InvalidArgumentError(absl::StrCat("response_format.schema ",
                                                       problem->starts_with("invalid") ? "is " : "",
                                                       *problem));
      }
      return openai::grammarForJsonSchema(std::get<nlohmann::ordered_json>(schema));
    }
    case tandem::v1::RESPONSE_FORMAT_TYPE_TEXT:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown response_format.type ", static_cast<int>(format.type())));
  }
  if (request.params().grammar().empty()) return std::string();
  return openai::checkedGrammar(request.params().grammar());
}

}  // namespace tandem::router
