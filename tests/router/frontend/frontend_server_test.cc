// The router's front door over a FakeGenerator: HTTP and gRPC admit through
// one Admission, so one API key list and one capacity budget hold across
// both (a sequence held on gRPC is a 429 on HTTP, and the other way round);
// both count their finished requests' prompts in the prompt-length mix its
// /metrics exports.
#include "router/frontend/frontend_server.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/prompt_mix_series.h"
#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/common/grpc/health_check_client.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"
#include "tests/fakes/fake_generator.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::router {
namespace {

using http::testing::RawClient;
using http::testing::RawResponse;

class FrontendServerTest : public ::testing::Test {
 protected:
  // the calls the generator holds give their budget back to the front
  // end's admission: the generator goes first, once nothing polls it.
  ~FrontendServerTest() override {
    if (frontend_ != nullptr) frontend_->drainAndStop(std::chrono::milliseconds(0));
    generator_.reset();
  }

  void serve(AdmissionOptions admission, int max_model_len = 256) {
    FrontendOptions options;
    options.http_port = 0;
    options.grpc_port = 0;
    options.admission = std::move(admission);
    absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
    ASSERT_TRUE(frontend.ok()) << frontend.status();
    frontend_ = std::move(*frontend);
    absl::StatusOr<ServedModelPtr> model =
        ServedModel::load(tandem::testing::storiesGguf(), "stories260K", max_model_len);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(frontend_->serve(std::move(*model), generator_.get()).ok());
    stub_ = tandem::v1::Inference::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(frontend_->grpcPort()),
                            grpc::InsecureChannelCredentials()));
  }

  RawResponse post(const std::string& body, const std::string& headers = "") {
    auto client = RawClient::connect(frontend_->httpPort());
    EXPECT_NE(client, nullptr);
    if (client == nullptr) return {};
    EXPECT_TRUE(client->send(http::testing::postRequest("/v1/completions", body, headers)));
    return client->readResponse(std::chrono::seconds(10)).value_or(RawResponse{});
  }

  // a generous deadline: a call admitted by mistake is held by the
  // generator and would never end.
  static void setDeadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  static tandem::v1::GenerateRequest grpcRequest() {
    tandem::v1::GenerateRequest request;
    request.set_text("Once");
    return request;
  }

  // the value of the sample `name` (with its labels, as rendered) in the
  // exposition `text`; -1 when absent.
  static double sampleIn(const std::string& exposition, const std::string& name) {
    const std::string text = "\n" + exposition;
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    const size_t value = at + name.size() + 2;
    return std::stod(text.substr(value, text.find('\n', value) - value));
  }
  // the value of the /metrics sample `name`; -1 when absent.
  double metric(const std::string& name) { return sampleIn(frontend_->metrics().render(), name); }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  FrontendServerPtr frontend_;
  std::unique_ptr<tandem::testing::FakeGenerator> generator_ =
      std::make_unique<tandem::testing::FakeGenerator>();
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
};

TEST_F(FrontendServerTest, HttpAndGrpcShareOneCapacityBudget) {
  serve({.max_admitted_seqs = 1});
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";

  // gRPC holds the one sequence: HTTP is refused.
  auto grpc_context = std::make_unique<grpc::ClientContext>();
  setDeadline(*grpc_context);
  auto held = stub_->Generate(grpc_context.get(), grpcRequest());
  tandem::v1::GenerateResponse message;
  ASSERT_TRUE(held->Read(&message));
  RawResponse r = post(body);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("Retry-After"), "1");
  grpc_context->TryCancel();
  while (held->Read(&message)) {}
  held->Finish();
  ASSERT_TRUE(http::testing::waitUntil([&] { return metric("tandem:admitted_seqs") == 0; },
                                       std::chrono::seconds(10)));

  // HTTP holds it: gRPC is refused.
  auto client = RawClient::connect(frontend_->httpPort());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})")));
  ASSERT_TRUE(client->readHead(std::chrono::seconds(10)).has_value());
  grpc::ClientContext refused_context;
  setDeadline(refused_context);
  auto refused = stub_->Generate(&refused_context, grpcRequest());
  EXPECT_FALSE(refused->Read(&message));
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(metric("tandem:requests_rejected_total{limit=\"seqs\"}"), 2);
  client->close();
  ASSERT_TRUE(http::testing::waitUntil([&] { return metric("tandem:admitted_seqs") == 0; },
                                       std::chrono::seconds(10)));
}

// a Kubernetes gRPC probe during a drain: the port still answers, and says
// NOT_SERVING (for the server and for tandem.v1.Inference) while a call is
// in flight; new calls are UNAVAILABLE; the port closes once the call ends.
TEST_F(FrontendServerTest, GrpcHealthIsNotServingWhileTheCallsInFlightDrain) {
  serve({});
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  const std::string address = "127.0.0.1:" + std::to_string(frontend_->grpcPort());
  // a probe connects anew each time (kubelet does).
  auto probe = [&](const std::string& service) {
    grpc::ChannelArguments fresh;
    fresh.SetInt("grpc.use_local_subchannel_pool", 1);
    auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), fresh);
    return grpc_util::testing::healthCheck(*channel, service);
  };
  EXPECT_EQ(probe("tandem.v1.Inference"), "SERVING");
  grpc::ClientContext held_context;
  setDeadline(held_context);
  auto held = stub_->Generate(&held_context, grpcRequest());
  tandem::v1::GenerateResponse message;
  ASSERT_TRUE(held->Read(&message));  // admitted and held by the generator

  std::thread drain([&] { frontend_->drainAndStop(std::chrono::seconds(30)); });
  EXPECT_TRUE(http::testing::waitUntil([&] { return probe("tandem.v1.Inference") == "NOT_SERVING"; },
                                       std::chrono::seconds(10)));
  EXPECT_EQ(probe(""), "NOT_SERVING");
  grpc::ClientContext late_context;
  setDeadline(late_context);
  auto late = stub_->Generate(&late_context, grpcRequest());
  EXPECT_FALSE(late->Read(&message));
  EXPECT_EQ(late->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  // the held call ends: the drain completes and the port closes.
  held_context.TryCancel();
  while (held->Read(&message)) {}
  held->Finish();
  drain.join();
  frontend_.reset();
  EXPECT_EQ(probe("").substr(0, 12), "UNAVAILABLE:");
}

TEST_F(FrontendServerTest, HttpAndGrpcTakeTheSameApiKeys) {
  serve({.api_keys = {"secret"}});
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";
  EXPECT_EQ(post(body).status, 401);
  EXPECT_EQ(post(body, "Authorization: Bearer secret\r\n").status, 200);
  tandem::v1::GenerateResponse message;
  grpc::ClientContext anonymous;
  auto refused = stub_->Generate(&anonymous, grpcRequest());
  while (refused->Read(&message)) {}
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext keyed;
  keyed.AddMetadata("authorization", "Bearer secret");
  auto accepted = stub_->Generate(&keyed, grpcRequest());
  while (accepted->Read(&message)) {}
  EXPECT_TRUE(accepted->Finish().ok());
}

// the series of mix counter `name` for the range with upper edge `label`.
std::string mixSeries(const char* name, const std::string& label) {
  return absl::StrCat(name, "{", prompt_mix::kRangeLabel, "=\"", label, "\"}");
}

TEST_F(FrontendServerTest, ExportsThePromptLengthMixOfFinishedRequests) {
  serve({}, 2048);
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0], oracle_.completion_ids[1],
                                           oracle_.completion_ids[2]},
                                .cached_tokens = 2});
  // over HTTP, two prompts (token ids) of two choices each: the oracle's
  // and 600 tokens.
  const int short_tokens = static_cast<int>(oracle_.prompt_ids.size());
  const std::vector<int32_t> long_prompt(600, oracle_.prompt_ids[0]);
  const nlohmann::json request = {{"model", "stories260K"},
                                  {"prompt", {oracle_.prompt_ids, long_prompt}},
                                  {"n", 2},
                                  {"max_tokens", 3}};
  RawResponse r = post(request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(nlohmann::json::parse(r.body)["usage"]["prompt_tokens"], short_tokens + 600);
  // and one prompt over gRPC.
  grpc::ClientContext context;
  setDeadline(context);
  auto reader = stub_->Generate(&context, grpcRequest());
  tandem::v1::GenerateResponse message;
  int grpc_prompt = 0;
  while (reader->Read(&message)) {
    if (message.has_usage()) grpc_prompt = message.usage().prompt_tokens();
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GT(grpc_prompt, 0);

  // what a scraper of the public port sees: per prompt (its choices'
  // tokens summed, its cache hit once) in the range of its length.
  auto client = RawClient::connect(frontend_->httpPort());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(http::testing::getRequest("/metrics")));
  const std::optional<RawResponse> scrape = client->readResponse(std::chrono::seconds(10));
  ASSERT_TRUE(scrape.has_value());
  ASSERT_EQ(scrape->status, 200);
  const std::string& text = scrape->body;
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kRequests, "512")), 2) << text;
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kPromptTokens, "512")), short_tokens + grpc_prompt);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kUncachedTokens, "512")), short_tokens + grpc_prompt - 4);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kOutputTokens, "512")), 6 + 3);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kPromptXOutput, "512")), short_tokens * 6 + grpc_prompt * 3);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kRequests, "1024")), 1);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kPromptTokens, "1024")), 600);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kUncachedTokens, "1024")), 598);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kOutputTokens, "1024")), 6);
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kPromptXOutput, "1024")), 3600);
  // every range is a series from the start, and only those: 13 of each counter.
  for (size_t k = 0; k < prompt_mix::kRanges; ++k) {
    EXPECT_GE(sampleIn(text, mixSeries(prompt_mix::kRequests, prompt_mix::rangeLabel(k))), 0) << k;
  }
  EXPECT_EQ(sampleIn(text, mixSeries(prompt_mix::kRequests, "+Inf")), 0);
  size_t series = 0;
  for (size_t at = text.find(std::string("\n") + prompt_mix::kRequests + "{"); at != std::string::npos;
       at = text.find(std::string("\n") + prompt_mix::kRequests + "{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, prompt_mix::kRanges);
  // the totals count the same prompts.
  EXPECT_EQ(sampleIn(text, "tandem:prompt_tokens_total"), short_tokens + grpc_prompt + 600);
  EXPECT_EQ(sampleIn(text, "tandem:prefix_cache_hit_tokens_total"), 6);
}

}  // namespace
}  // namespace tandem::router
