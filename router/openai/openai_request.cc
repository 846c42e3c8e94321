#include "router/openai/openai_request.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "router/openai/json_field.h"
#include "router/openai/request_inputs.h"
#include "router/openai/response_format.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

// a JSON number as the float a field holds; out-of-range values become
// infinities (a plain cast would be undefined) so validate() rejects them.
float toFloat(double value) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (value > kMax) return std::numeric_limits<float>::infinity();
  if (value < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

// "stop": a string or an array of strings; empty strings never match and
// are dropped.
void readStop(FieldReader& reader, GenerationRequest& request) {
  const Json* stop = reader.find("stop");
  if (stop == nullptr) return;
  if (stop->is_string()) {
    if (!stop->get_ref<const std::string&>().empty()) request.stop.push_back(stop->get<std::string>());
    return;
  }
  if (!stop->is_array()) {
    reader.fail("stop", absl::StrCat("stop must be a string or an array of strings, got ",
                                     stop->type_name()));
    return;
  }
  if (stop->size() > static_cast<size_t>(GenerationRequest::kMaxStopStrings)) {
    reader.fail("stop", absl::StrCat("stop may hold at most ", GenerationRequest::kMaxStopStrings,
                                     " strings, got ", stop->size()));
    return;
  }
  for (const Json& item : *stop) {
    if (!item.is_string()) {
      reader.fail("stop", absl::StrCat("stop must be a string or an array of strings, got an "
                                       "array holding a ", item.type_name()));
      return;
    }
    if (!item.get_ref<const std::string&>().empty()) request.stop.push_back(item.get<std::string>());
  }
}

// a token budget: an integer of at least 1.
std::optional<int> readTokenBudget(FieldReader& reader, std::string_view name) {
  std::optional<int64_t> value =
      reader.readInt(name, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (!value) return std::nullopt;
  if (*value < 1) {
    reader.fail(name, absl::StrCat(std::string(name), " must be at least 1, got ", *value));
    return std::nullopt;
  }
  if (*value > kInt32Max) {
    reader.fail(name, absl::StrCat(std::string(name), " must be at most ", kInt32Max, ", got ",
                                   *value));
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

// "seed": any integer that fits 64 bits; OpenAI allows negative seeds, which
// keep their two's-complement bits.
void readSeed(FieldReader& reader, generation::SamplingParams& sampling) {
  const Json* seed = reader.find("seed");
  if (seed == nullptr) return;
  if (seed->is_number_unsigned()) {
    sampling.seed = seed->get<uint64_t>();
  } else if (std::optional<int64_t> value = asInteger(*seed)) {
    sampling.seed = static_cast<uint64_t>(*value);
  } else {
    reader.fail("seed", absl::StrCat("seed must be an integer, got ", seed->dump()));
  }
}

// "logit_bias": {"<token id>": bias}; the ranges are SamplingParams'
// (validate), whether an id is in the vocabulary the generator's.
void readLogitBias(FieldReader& reader, generation::SamplingParams& sampling) {
  const Json* bias = reader.readObject("logit_bias");
  if (bias == nullptr) return;
  if (bias->size() > static_cast<size_t>(generation::SamplingParams::kMaxLogitBias)) {
    reader.fail("logit_bias", absl::StrCat("logit_bias may hold at most ",
                                           generation::SamplingParams::kMaxLogitBias,
                                           " entries, got ", bias->size()));
    return;
  }
  for (const auto& [key, value] : bias->items()) {
    int64_t id = -1;
    const bool numeric = !key.empty() && key.size() <= 10 &&
                         key.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) id = std::stoll(key);
    if (!numeric || id > kInt32Max) {
      reader.fail("logit_bias", absl::StrCat("logit_bias keys must be token ids, got \"", key,
                                             "\""));
      return;
    }
    if (!value.is_number()) {
      reader.fail("logit_bias", absl::StrCat("logit_bias values must be numbers, got ",
                                             value.dump(), " for token ", id));
      return;
    }
    sampling.logit_bias.emplace_back(static_cast<int32_t>(id), toFloat(value.get<double>()));
  }
}

// the fields SamplingParams holds, range-checked by its validate().
void readSampling(FieldReader& reader, GenerationRequest& request) {
  generation::SamplingParams& sampling = request.sampling;
  auto readFloat = [&reader](std::string_view name, float& field) {
    if (std::optional<double> value = reader.readNumber(name)) field = toFloat(*value);
  };
  readFloat("temperature", sampling.temperature);
  readFloat("top_p", sampling.top_p);
  readFloat("min_p", sampling.min_p);
  readFloat("repetition_penalty", sampling.repetition_penalty);
  readFloat("presence_penalty", sampling.presence_penalty);
  readFloat("frequency_penalty", sampling.frequency_penalty);
  if (std::optional<int64_t> top_k = reader.readInt("top_k", kInt32Min, kInt32Max)) {
    sampling.top_k = static_cast<int>(*top_k);
  }
  readSeed(reader, sampling);
  readLogitBias(reader, sampling);
  if (std::optional<bool> ignore_eos = reader.readBool("ignore_eos")) sampling.ignore_eos = *ignore_eos;
  if (const Json* ids = reader.readArray("stop_token_ids")) {
    for (const Json& item : *ids) {
      std::optional<int64_t> id = asInteger(item);
      if (!id || *id < kInt32Min || *id > kInt32Max) {
        reader.fail("stop_token_ids", absl::StrCat("stop_token_ids must hold token ids, got ",
                                                   item.dump()));
        return;
      }
      sampling.stop_token_ids.push_back(static_cast<int32_t>(*id));
    }
  }

  // the chat API renamed max_tokens; the new name wins when both are sent.
  // completions: 0 with echo scores the prompt (request.score_only).
  std::optional<int> max_tokens;
  if (request.endpoint == Endpoint::kCompletions && request.echo) {
    if (const Json* value = reader.find("max_tokens"); value != nullptr && *value == 0) {
      request.score_only = true;
      max_tokens = 1;
    }
  }
  if (!request.score_only) max_tokens = readTokenBudget(reader, "max_tokens");
  std::optional<int> max_completion_tokens;
  if (request.endpoint == Endpoint::kChatCompletions) {
    max_completion_tokens = readTokenBudget(reader, "max_completion_tokens");
  }
  if (std::optional<int> budget = max_completion_tokens ? max_completion_tokens : max_tokens) {
    sampling.max_tokens = *budget;
    request.max_tokens_set = true;
  }
}

// completions: "logprobs": n; chat: "logprobs": bool plus "top_logprobs": n.
void readLogprobs(FieldReader& reader, GenerationRequest& request) {
  constexpr int kMax = generation::SamplingParams::kMaxLogprobs;
  if (request.endpoint == Endpoint::kCompletions) {
    if (std::optional<int64_t> n = reader.readInt("logprobs", 0, kMax)) {
      request.want_logprobs = true;
      request.top_logprobs = static_cast<int>(*n);
    }
  } else {
    request.want_logprobs = reader.readBool("logprobs").value_or(false);
    if (std::optional<int64_t> n = reader.readInt("top_logprobs", 0, kMax)) {
      if (!request.want_logprobs) {
        reader.fail("top_logprobs", "top_logprobs requires logprobs to be true");
        return;
      }
      request.top_logprobs = static_cast<int>(*n);
    }
  }
  if (request.want_logprobs) request.sampling.logprobs = request.top_logprobs;
  if (std::optional<int64_t> n = reader.readInt("prompt_logprobs", 0, kMax)) {
    request.prompt_logprobs = static_cast<int>(*n);
  }
  // echo with logprobs shows the prompt's tokens too: the generator scores
  // the prompt with the larger top count either field asks for.
  const bool echo_scores = request.echo && request.want_logprobs;
  if (echo_scores || request.prompt_logprobs) {
    request.sampling.prompt_logprobs = std::max(echo_scores ? request.top_logprobs : 0,
                                                request.prompt_logprobs.value_or(0));
  }
}

void readStreaming(FieldReader& reader, GenerationRequest& request) {
  request.stream = reader.readBool("stream").value_or(false);
  if (request.stream && request.prompt_logprobs) {
    reader.fail("prompt_logprobs", "prompt_logprobs are not available when stream is true");
    return;
  }
  if (const Json* options = reader.readObject("stream_options")) {
    if (!request.stream) {
      reader.fail("stream_options", "stream_options is only allowed when stream is true");
      return;
    }
    FieldReader nested(*options, "stream_options.");
    request.include_usage = nested.readBool("include_usage").value_or(false);
    reader.absorb(nested);
  }
}

// fields whose meaning this server does not implement: refused, not ignored,
// so a client never gets output that silently differs from what it asked.
void refuseUnsupported(FieldReader& reader, const GenerationRequest& request) {
  if (std::optional<std::string> suffix = reader.readString("suffix"); suffix && !suffix->empty()) {
    reader.fail("suffix", "suffix is not supported");
  }
  if (std::optional<int64_t> best_of = reader.readInt("best_of", 1, kInt32Max)) {
    if (*best_of < request.n) {
      reader.fail("best_of", absl::StrCat("best_of must be at least n (", request.n, "), got ",
                                          *best_of));
    } else if (*best_of > request.n) {
      reader.fail("best_of", "best_of greater than n is not supported");
    }
  }
}

// validate()'s message starts with the field it objects to; that field, as
// the client named it, is the error's param.
std::string validationParam(const std::string& message, const GenerationRequest& request,
                            const FieldReader& reader) {
  std::string field = message.substr(0, message.find(' '));
  bool chat = request.endpoint == Endpoint::kChatCompletions;
  if (field == "logprobs" && chat) return "top_logprobs";
  if (field == "max_tokens" && chat && reader.find("max_completion_tokens") != nullptr) {
    return "max_completion_tokens";
  }
  return field;
}

}  // namespace

ParseResult parseGenerationRequest(std::string_view body, Endpoint endpoint) {
  std::variant<Json, openai::ApiError> parsed = parseJsonObject(body);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) return std::move(*error);
  Json json = std::get<Json>(std::move(parsed));

  GenerationRequest request;
  request.endpoint = endpoint;
  FieldReader reader(json);
  if (reader.find("model") == nullptr) {
    reader.fail("model", "you must provide a model parameter");
  } else if (std::optional<std::string> model = reader.readString("model")) {
    request.model = std::move(*model);
  }
  if (endpoint == Endpoint::kCompletions) {
    readPrompts(reader, request);
    request.echo = reader.readBool("echo").value_or(false);
  } else {
    checkMessages(reader);
    readTemplateFields(reader, request);
  }
  readSampling(reader, request);
  readStop(reader, request);
  if (std::optional<int64_t> n = reader.readInt("n", 1, GenerationRequest::kMaxN)) {
    request.n = static_cast<int>(*n);
  }
  readLogprobs(reader, request);
  readStreaming(reader, request);
  if (std::optional<std::string> user = reader.readString("user")) request.user = std::move(*user);
  request.skip_special_tokens = reader.readBool("skip_special_tokens").value_or(true);
  request.include_stop_str_in_output =
      reader.readBool("include_stop_str_in_output").value_or(false);
  readStructuredOutput(reader, request);
  refuseUnsupported(reader, request);
  if (reader.failed()) return reader.error();

  if (absl::Status status = request.sampling.validate(); !status.ok()) {
    std::string message(status.message());
    std::string param = validationParam(message, request, reader);
    return openai::errorFor(400, std::move(message), std::move(param));
  }
  if (endpoint == Endpoint::kChatCompletions) takeTemplateInputs(json, request);
  return request;
}

}  // namespace tandem::openai
