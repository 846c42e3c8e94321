// A tandem.v1.Inference/Generate request body as the router handles it once
// gRPC delivered the bytes: parsed by protobuf's own parser the way the raw
// method parses it (common/grpc/byte_buffer_message.h; a body that does not
// parse must be INVALID_ARGUMENT naming the message type), turned into the
// admission's request (router/grpc/generate_request.h: model, prompt,
// sampling params, response_format or grammar compiled), and prepared by the
// real Admission over the embedded model (model, size and length checks,
// the prompt tokenized): everything InferenceGenerateCall does before it submits to
// the generator, which is not here. What the admission accepts must fit the
// context. Structure-aware (fuzz/proto_mutator.h): most mutants parse and
// reach the code behind the parser.
// Input: the request's wire format.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <variant>

#include "common/grpc/byte_buffer_message.h"
#include "fuzz/proto_mutator.h"
#include "google/protobuf/stubs/logging.h"
#include "router/generate/admission.h"
#include "router/grpc/generate_request.h"

namespace {

using tandem::router::Admission;

constexpr int kMaxModelLen = 512;

// field values the code behind the parser treats specially.
constexpr std::string_view kWords[] = {
    "stories260K", "Once upon a time", "<s>", "</s>", "\xE2\x96\x81", "\xF0\x9F\x98\x80",
    "root ::= \"a\"", "root ::= (\"(\" root \")\")?", "root ::= [a-z]{1,100000}", "root ::= x\nx ::= ",
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}",
    "{\"$ref\":\"#\"}", "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"array\",\"items\":{}}]}",
    "[[[[[[[[", "{\"type\":\"string\",\"maxLength\":100000}", "\n", " ", "\"", "\\", "{", "}",
};

struct Served {
  tandem::router::ServedModelPtr model;
  tandem::router::ServingMetrics metrics;
  std::unique_ptr<Admission> admission;
};

// the embedded model and an Admission over it. No generator: prepare()
// never reaches one.
Served& served() {
  static Served* s = [] {
    auto* out = new Served;
    auto model = tandem::router::ServedModel::load(
        TANDEM_SOURCE_DIR "/models/stories260K/gguf/stories260K.gguf", "stories260K", kMaxModelLen);
    if (!model.ok()) __builtin_trap();
    out->model = std::move(*model);
    out->admission = std::make_unique<Admission>(
        tandem::router::CallContext{out->model.get(), nullptr, &out->metrics},
        tandem::router::AdmissionOptions{.prepare_threads = 1});
    return out;
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs every string field that is not UTF-8; the target makes many.
  google::protobuf::SetLogHandler(nullptr);
  served();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return tandem::fuzz::mutateProto<tandem::v1::GenerateRequest>(data, size, max_size, seed, kWords);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grpc::Slice slice(data, size);
  const grpc::ByteBuffer body(&slice, 1);
  tandem::v1::GenerateRequest request;
  grpc::Status parsed = tandem::grpc_util::fromByteBuffer(body, &request);
  if (!parsed.ok()) {
    if (parsed.error_code() != grpc::StatusCode::INVALID_ARGUMENT ||
        parsed.error_message().find("tandem.v1.GenerateRequest") == std::string::npos) {
      __builtin_trap();
    }
    return 0;
  }
  Served& s = served();
  tandem::router::GrpcGeneration generation = tandem::router::toGeneration(request, s.model->name());
  auto prepared = s.admission->prepare(generation.request);
  auto* prompts = std::get_if<std::vector<tandem::router::TokenizedPrompt>>(&prepared);
  if (prompts == nullptr || !generation.params.ok()) return 0;
  // what the admission accepts fits the context, with room for max_tokens.
  const int max_tokens = generation.request.sampling.max_tokens;
  for (const auto& p : *prompts) {
    const int64_t total = static_cast<int64_t>(p.tokens.size()) + max_tokens;
    if (p.tokens.empty() || max_tokens < 1 || total > kMaxModelLen) __builtin_trap();
  }
  return 0;
}
