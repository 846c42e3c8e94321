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
      // nested as deep as an HTTP body may be (the same schema is refused
      // the same way on both APIs); deeper subtrees are never built.
      bool too_deep = false;
      const nlohmann::ordered_json::parser_callback_t limit_depth =
          [&too_deep](int depth, nlohmann::ordered_json::parse_event_t event,
                      nlohmann::ordered_json&) {
            if ((event == nlohmann::ordered_json::parse_event_t::object_start ||
                 event == nlohmann::ordered_json::parse_event_t::array_start) &&
                depth >= openai::kMaxJsonDepth) {
              too_deep = true;
              return false;
            }
            return true;
          };
      const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(
          format.schema(), limit_depth, /*allow_exceptions=*/false);
      if (schema.is_discarded()) {
        return absl::InvalidArgumentError("response_format.schema is not valid JSON");
      }
      if (too_deep) {
        return absl::InvalidArgumentError(absl::StrCat(
            "response_format.schema nests deeper than ", openai::kMaxJsonDepth, " levels"));
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
