// What an operator of `tandem serve` sees: the router's access log (one
// line per HTTP and gRPC request, success and error, with the fields they
// grep for) and, when a process crashes, the request ids it held — a real
// SIGSEGV sent to the router and a SIGABRT to the decode worker in the
// middle of a request, each reported by the dying process and its restart
// by the supervisor.
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/cli/serve_process.h"
#include "tests/common/http/raw_client.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using nlohmann::json;

std::vector<std::string> fileLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// the access log's lines once it has at least `n` (waits up to 30 s).
std::vector<json> waitForEntries(const std::string& path, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<std::string> lines = fileLines(path);
  while (lines.size() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lines = fileLines(path);
  }
  std::vector<json> entries;
  for (const std::string& line : lines) entries.push_back(json::parse(line));
  return entries;
}

// the entry with this request id (null when none).
json entryFor(const std::vector<json>& entries, const std::string& id) {
  for (const json& e : entries) {
    if (e["request_id"] == id) return e;
  }
  return json();
}

class ServeOperabilityTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ServeOperabilityTest, TheAccessLogHasALinePerHttpAndGrpcRequest) {
  const std::string log = dir_ + "/access.log";
  auto serve = testing::ServeProcess::start({"--access-log", log, "--access-log-format", "json"});
  ASSERT_TRUE(serve.ok()) << serve.status();
  testing::ServeProcess& s = **serve;

  // HTTP: a completion with the client's id, a 404 model, a 400 body.
  auto client = http::testing::RawClient::connect(s.httpPort());
  ASSERT_NE(client, nullptr);
  const std::string body = R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":4})";
  ASSERT_TRUE(client->send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nX-Request-Id: http-ok-1\r\n"
                           "Content-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body));
  auto ok = client->readResponse();
  ASSERT_TRUE(ok.has_value());
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->header("X-Request-Id"), "http-ok-1");
  auto missing = s.post("/v1/completions", R"({"model":"gpt-9","prompt":"x"})");
  ASSERT_TRUE(missing.has_value());
  ASSERT_EQ(missing->status, 404);
  const std::string missing_id = missing->header("X-Request-Id");
  EXPECT_EQ(missing_id.rfind("req-", 0), 0u) << missing_id;
  auto bad = s.post("/v1/chat/completions", "{not json");
  ASSERT_TRUE(bad.has_value());
  ASSERT_EQ(bad->status, 400);

  // gRPC: a generation with a request_id, one for another model, ListModels.
  auto stub = tandem::v1::Inference::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(s.grpcPort()), grpc::InsecureChannelCredentials()));
  for (const char* model : {"", "gpt-9"}) {
    tandem::v1::GenerateRequest request;
    request.set_model(model);
    request.set_text("Once upon a time");
    request.set_request_id(std::string("grpc-") + (*model == '\0' ? "ok" : "missing"));
    request.mutable_params()->set_max_tokens(3);
    grpc::ClientContext context;
    auto reader = stub->Generate(&context, request);
    tandem::v1::GenerateResponse msg;
    while (reader->Read(&msg)) {
    }
    EXPECT_EQ(reader->Finish().error_code(),
              *model == '\0' ? grpc::StatusCode::OK : grpc::StatusCode::NOT_FOUND);
  }
  grpc::ClientContext list_context;
  tandem::v1::ListModelsResponse models;
  ASSERT_TRUE(stub->ListModels(&list_context, {}, &models).ok());

  const std::vector<json> entries = waitForEntries(log, 6);
  ASSERT_GE(entries.size(), 6u);
  const json http_ok = entryFor(entries, "http-ok-1");
  ASSERT_FALSE(http_ok.is_null()) << log;
  EXPECT_EQ(http_ok["protocol"], "http");
  EXPECT_EQ(http_ok["api"], "/v1/completions");
  EXPECT_EQ(http_ok["model"], "stories260K");
  EXPECT_EQ(http_ok["status"], 200);
  EXPECT_EQ(http_ok["prompt_tokens"], 5);
  EXPECT_EQ(http_ok["output_tokens"], 4);
  EXPECT_GT(http_ok["ttft_ms"].get<double>(), 0);
  EXPECT_GE(http_ok["duration_ms"].get<double>(), http_ok["ttft_ms"].get<double>());
  EXPECT_EQ(http_ok["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
  EXPECT_EQ(http_ok["time"].get<std::string>().size(), 24u);  // 2025-01-31T12:00:00.123Z

  const json http_missing = entryFor(entries, missing_id);
  ASSERT_FALSE(http_missing.is_null());
  EXPECT_EQ(http_missing["status"], 404);
  EXPECT_TRUE(http_missing["output_tokens"].is_null());
  EXPECT_TRUE(http_missing["ttft_ms"].is_null());
  bool saw_400 = false;
  for (const json& e : entries) saw_400 |= e["api"] == "/v1/chat/completions" && e["status"] == 400;
  EXPECT_TRUE(saw_400);

  const json grpc_ok = entryFor(entries, "grpc-ok");
  ASSERT_FALSE(grpc_ok.is_null());
  EXPECT_EQ(grpc_ok["protocol"], "grpc");
  EXPECT_EQ(grpc_ok["api"], "/tandem.v1.Inference/Generate");
  EXPECT_EQ(grpc_ok["status"], 0);
  EXPECT_EQ(grpc_ok["output_tokens"], 3);
  EXPECT_FALSE(grpc_ok["ttft_ms"].is_null());
  const json grpc_missing = entryFor(entries, "grpc-missing");
  ASSERT_FALSE(grpc_missing.is_null());
  EXPECT_EQ(grpc_missing["status"], 5);  // NOT_FOUND
  bool saw_list = false;
  for (const json& e : entries) saw_list |= e["api"] == "/tandem.v1.Inference/ListModels" && e["status"] == 0;
  EXPECT_TRUE(saw_list);
}

// starts a long streamed request (64 choices of 400 tokens) and returns
// once its first chunk arrived: it is in flight on the router and a worker.
std::unique_ptr<http::testing::RawClient> startLongRequest(int port, const std::string& id) {
  auto client = http::testing::RawClient::connect(port);
  if (client == nullptr) return nullptr;
  const std::string body =
      R"({"model":"stories260K","prompt":"Once","max_tokens":400,"ignore_eos":true,"n":64,"stream":true})";
  client->send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nX-Request-Id: " + id +
               "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body);
  if (!client->readHead() || !client->readChunk()) return nullptr;
  return client;
}

TEST_F(ServeOperabilityTest, ACrashedProcessNamesTheRequestsItHeld) {
  auto serve = testing::ServeProcess::start({});
  ASSERT_TRUE(serve.ok()) << serve.status();
  testing::ServeProcess& s = **serve;

  // the router: SIGSEGV while it streams "doomed-router-1".
  const pid_t router = testing::childWith(s.pid(), " router");
  ASSERT_GT(router, 0);
  auto first = startLongRequest(s.httpPort(), "doomed-router-1");
  ASSERT_NE(first, nullptr);
  const size_t before_crash = s.lines().size();
  ASSERT_EQ(::kill(router, SIGSEGV), 0);
  EXPECT_TRUE(s.waitForLine([](const std::string& line) {
    return line.find("[router] tandem router: fatal signal 11 (SIGSEGV) holding requests:") == 0 &&
           line.find(" doomed-router-1") != std::string::npos;
  })) << "no crash report naming the request";
  EXPECT_TRUE(s.waitForLine([](const std::string& line) {
    return line.find("[supervisor] router exited (signal 11") == 0;
  }));
  // back on its old ports, once the workers registered again
  ASSERT_TRUE(s.waitForLine([](const std::string& line) {
    return line.find("[router] tandem router: model 'stories260K'") == 0;
  }, std::chrono::seconds(60), before_crash));

  // the decode worker: SIGABRT while it generates another long request. It
  // holds the router's attempt id of the request (nothing else is running).
  const pid_t decode = testing::childWith(s.pid(), "--role decode");
  ASSERT_GT(decode, 0);
  auto second = startLongRequest(s.httpPort(), "doomed-worker-2");
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(::kill(decode, SIGABRT), 0);
  EXPECT_TRUE(s.waitForLine([](const std::string& line) {
    return line.find("[decode-0] tandem worker: fatal signal 6 (SIGABRT) holding requests:") == 0 &&
           line.find("holding requests: none") == std::string::npos;
  })) << "no crash report of the worker";
  EXPECT_TRUE(s.waitForLine([](const std::string& line) {
    return line.find("[supervisor] decode-0 exited (signal 6") == 0;
  }));
}

}  // namespace
}  // namespace tandem
