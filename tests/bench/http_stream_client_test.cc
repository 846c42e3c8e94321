// The HTTP/SSE client against a scripted server on loopback: streams,
// usage, keep-alive reuse, and every kind of failure.
#include "bench/loadgen/http_stream_client.h"

#include <gtest/gtest.h>

#include <future>

#include "bench/loadgen/http_fetch.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/server_metrics.h"
#include "bench/loadgen/token_synth.h"
#include "tests/bench/fake_openai_server.h"

namespace tandem::bench {
namespace {

using std::chrono::milliseconds;

class HttpStreamClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeServerOptions o;
    o.first_token_delay = milliseconds(20);
    o.token_interval = milliseconds(5);
    o.cached_tokens = 2;
    auto s = testing::FakeOpenAiServer::start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    auto c = HttpStreamClient::create(server_->url(), HttpClientOptions{});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  StreamResult send(StreamRequest req) {
    std::promise<StreamResult> p;
    client_->start(std::move(req), [&](StreamResult r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }

  static StreamRequest completion(int max_tokens, std::string model = "fake-model") {
    StreamRequest r;
    r.model = std::move(model);
    r.prompt_ids = {11, 12, 13};
    r.max_tokens = max_tokens;
    return r;
  }

  std::unique_ptr<testing::FakeOpenAiServer> server_;
  std::unique_ptr<HttpStreamClient> client_;
};

TEST_F(HttpStreamClientTest, StreamsEveryTokenWithItsTimeAndReadsUsage) {
  StreamResult r = send(completion(5));
  ASSERT_TRUE(r.ok) << r.error_kind << ": " << r.error_message;
  EXPECT_EQ(r.text, " t0 t1 t2 t3 t4");
  ASSERT_EQ(r.token_times.size(), 5u);
  EXPECT_EQ(r.completion_tokens, 5);
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.cached_tokens, 2);
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  EXPECT_GE(ms(r.token_times[0] - r.start), 20);
  for (size_t i = 1; i < 5; ++i) EXPECT_GE(ms(r.token_times[i] - r.token_times[i - 1]), 0);
  // token k is written no earlier than 20 + 5k ms after the request arrived.
  EXPECT_GE(ms(r.token_times[4] - r.start), 40);
  EXPECT_GE(r.end, r.token_times.back());
}

TEST_F(HttpStreamClientTest, StreamsChatDeltas) {
  StreamRequest r = completion(3);
  r.api = Api::kChat;
  r.prompt_ids.clear();
  r.messages = {{"user", "hello"}};
  StreamResult res = send(r);
  ASSERT_TRUE(res.ok) << res.error_message;
  EXPECT_EQ(res.text, " t0 t1 t2");
}

TEST_F(HttpStreamClientTest, ReusesKeepAliveConnections) {
  TokenSynth synth = TokenSynth::fromRange(10, 20);
  WorkloadOptions o;
  o.input_len = 4;
  o.output_len = 2;
  auto w = createWorkload("random", o, WorkloadContext{nullptr, &synth});
  auto arrivals = closedLoopArrivals();
  RunnerOptions ro;
  ro.model = "fake-model";
  ro.max_concurrency = 2;
  ro.num_requests = 12;
  auto run = runBenchmark(**w, *arrivals, *client_, nullptr, ro, Slo{}, nullptr);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->summary.completed, 12u);
  EXPECT_EQ(client_->connectionsOpened(), 2);
  EXPECT_DOUBLE_EQ(*run->summary.cached_token_ratio, 0.5);  // 2 of 4 prompt tokens
}

TEST_F(HttpStreamClientTest, ReportsHttpErrorsWithTheServersMessage) {
  StreamResult r = send(completion(3, "fail-503"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "http_503");
  EXPECT_EQ(r.error_message, "overloaded");
  // the connection stays usable.
  EXPECT_TRUE(send(completion(2)).ok);
}

TEST_F(HttpStreamClientTest, ReportsAnErrorEventInTheStream) {
  StreamResult r = send(completion(3, "fail-midstream"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "stream_error");
  EXPECT_EQ(r.error_message, "worker died");
}

TEST_F(HttpStreamClientTest, ReportsARefusedConnection) {
  // a port that was just free: bind nothing there.
  auto c = HttpStreamClient::create("http://127.0.0.1:1", HttpClientOptions{});
  ASSERT_TRUE(c.ok());
  std::promise<StreamResult> p;
  (*c)->start(completion(1), [&](StreamResult r) { p.set_value(std::move(r)); });
  StreamResult r = p.get_future().get();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "connect");
}

TEST_F(HttpStreamClientTest, TimesOutASlowStream) {
  HttpClientOptions o;
  o.request_timeout = milliseconds(30);
  auto c = HttpStreamClient::create(server_->url(), o);
  ASSERT_TRUE(c.ok());
  std::promise<StreamResult> p;
  (*c)->start(completion(50), [&](StreamResult r) { p.set_value(std::move(r)); });
  StreamResult r = p.get_future().get();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "timeout");
}

TEST_F(HttpStreamClientTest, ShutdownCancelsWhatIsInFlight) {
  std::promise<StreamResult> p;
  client_->start(completion(1000), [&](StreamResult r) { p.set_value(std::move(r)); });
  std::this_thread::sleep_for(milliseconds(40));
  client_->shutdown();
  StreamResult r = p.get_future().get();
  EXPECT_EQ(r.error_kind, "cancelled");
}

TEST_F(HttpStreamClientTest, FetchesTheModelListAndMetrics) {
  auto ep = parseHttpUrl(server_->url() + "/v1/");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->base_path, "");
  auto model = firstModelId(*ep);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*model, "fake-model");
  ASSERT_TRUE(send(completion(1)).ok);
  auto text = httpGet(*ep, "/metrics");
  ASSERT_TRUE(text.ok());
  absl::StatusOr<std::map<std::string, double>> values = seriesValues(*text);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("fake_requests_total"), 1);
}

TEST(HttpUrlTest, ParsesHostsPortsAndPrefixes) {
  auto a = parseHttpUrl("http://localhost:8090");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "localhost");
  EXPECT_EQ(a->port, "8090");
  auto b = parseHttpUrl("example.com/openai/v1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, "80");
  EXPECT_EQ(b->base_path, "/openai");
  auto c = parseHttpUrl("http://[::1]:9000/");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_FALSE(parseHttpUrl("https://x").ok());
  EXPECT_FALSE(parseHttpUrl("http://x:99999").ok());
}

TEST(ServerMetricsTest, ParsesPrometheusTextAndDiffs) {
  auto before = seriesValues(
      "# HELP x_total things\n# TYPE x_total counter\nx_total 3\ny{a=\"b c\",d=\"e\"} 1.5 1700000000\n");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->at("x_total"), 3);
  EXPECT_EQ(before->at("y{a=\"b c\",d=\"e\"}"), 1.5);
  EXPECT_EQ(before->size(), 2u);
  auto after = seriesValues("x_total 10\ny{a=\"b c\",d=\"e\"} 1.5\n");
  ASSERT_TRUE(after.ok()) << after.status();
  auto d = metricsDelta(*before, *after);
  EXPECT_EQ(d["delta"]["x_total"], 7);
  EXPECT_FALSE(d["delta"].contains("y{a=\"b c\",d=\"e\"}"));
}

TEST(ServerMetricsTest, AMalformedLineIsAnErrorNamingIt) {
  auto values = seriesValues("x_total 3\nbad line\n");
  ASSERT_FALSE(values.ok());
  EXPECT_NE(values.status().message().find("line 2"), std::string::npos) << values.status();
}

}  // namespace
}  // namespace tandem::bench
