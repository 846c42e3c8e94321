#include "bench/loadgen/openai_stream.h"

#include "nlohmann/json.hpp"

namespace tandem::bench {

using nlohmann::json;

const char* apiName(Api api) {
  switch (api) {
    case Api::kCompletions: return "completions";
    case Api::kChat: return "chat";
    case Api::kGrpc: return "grpc";
  }
  return "";
}

const char* openAiPath(Api api) {
  return api == Api::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string openAiBody(const StreamRequest& req) {
  json body = {{"model", req.model},
               {"max_tokens", req.max_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"ignore_eos", req.ignore_eos}};
  if (req.temperature) body["temperature"] = *req.temperature;
  if (req.api == Api::kChat) {
    json messages = json::array();
    for (const ChatMessage& m : req.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
  } else if (!req.prompt_ids.empty()) {
    body["prompt"] = req.prompt_ids;
  } else {
    body["prompt"] = req.prompt_text;
  }
  // synthetic text can hold odd bytes; replace rather than fail.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void OpenAiStreamReader::onData(std::string_view data, Clock::time_point t, StreamResult* result) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  json j = json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    result->error_kind = "protocol";
    result->error_message = "an event is not a JSON object";
    return;
  }
  if (auto err = j.find("error"); err != j.end()) {
    result->error_kind = "stream_error";
    result->error_message = err->is_object() && err->contains("message") && (*err)["message"].is_string()
                                ? (*err)["message"].get<std::string>()
                                : err->dump();
    return;
  }
  if (auto choices = j.find("choices"); choices != j.end() && choices->is_array() && !choices->empty()) {
    const json& c = (*choices)[0];
    const json* text = nullptr;
    if (api_ == Api::kChat) {
      if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
        if (auto ct = d->find("content"); ct != d->end() && ct->is_string()) text = &*ct;
        if (auto rc = d->find("reasoning_content"); text == nullptr && rc != d->end() && rc->is_string()) {
          text = &*rc;
        }
      }
    } else if (auto tx = c.find("text"); tx != c.end() && tx->is_string()) {
      text = &*tx;
    }
    if (text != nullptr && !text->get_ref<const std::string&>().empty()) {
      result->token_times.push_back(t);
      result->text += text->get_ref<const std::string&>();
    }
    if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) {
      result->finish_reason = fr->get<std::string>();
    }
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer()) {
      result->prompt_tokens = p->get<int>();
    }
    if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer()) {
      result->completion_tokens = c->get<int>();
    }
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object()) {
      if (auto ct = d->find("cached_tokens"); ct != d->end() && ct->is_number_integer()) {
        result->cached_tokens = ct->get<int>();
      }
    }
  }
  // llama-server reports its prompt cache hits as timings.cache_n.
  if (auto tm = j.find("timings"); tm != j.end() && tm->is_object() && result->cached_tokens < 0) {
    if (auto cn = tm->find("cache_n"); cn != tm->end() && cn->is_number_integer()) {
      result->cached_tokens = cn->get<int>();
    }
  }
}

}  // namespace tandem::bench
