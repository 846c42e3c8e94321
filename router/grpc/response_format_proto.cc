#include "router/grpc/response_format_proto.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "router/openai/response_format.h"

namespace tandem::router {

absl::StatusOr<std::string> requestGrammar(const tandem::v1::GenerateRequest& request) {
  const tandem::v1::ResponseFormat& format = request.response_format();
  switch (format.type()) {
    case tandem::v1::RESPONSE_FORMAT_TYPE_JSON_OBJECT:
      return openai::grammarForJsonObject();
    case tandem::v1::RESPONSE_FORMAT_TYPE_JSON_SCHEMA: {
      const nlohmann::ordered_json schema =
          nlohmann::ordered_json::parse(format.schema(), nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) {
        return absl::InvalidArgumentError("response_format.schema is not valid JSON");
      }
      return openai::grammarForJsonSchema(schema);
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
