// the router's front door: before its model is known gRPC listens at
// start(), while tandem.v1.Inference answers UNAVAILABLE and HTTP /health is
// not ready (the workers' registry is on the internal port:
// registry_server_test.cc); once serving, /health follows
// whether a decode worker is healthy (a readiness probe), and so does gRPC
// health.
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "router/cluster/remote_generator.h"
#include "router/frontend/frontend_server.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/common/http/raw_client.h"
#include "tests/router/cluster/fake_worker.h"
#include "tests/test_paths.h"

namespace tandem::router::cluster {
namespace {

TEST(RouterFrontendTest, InferenceIsUnavailableBeforeTheModel) {
  FrontendOptions options;
  options.http_port = 0;
  options.grpc_port = 0;
  options.grpc_at_start = true;
  absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
  ASSERT_TRUE(frontend.ok()) << frontend.status();
  ASSERT_GT((*frontend)->grpcPort(), 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*frontend)->grpcPort()),
                                     grpc::InsecureChannelCredentials());
  auto inference = tandem::v1::Inference::NewStub(channel);
  grpc::ClientContext list_context;
  tandem::v1::ListModelsResponse models;
  EXPECT_EQ(inference->ListModels(&list_context, tandem::v1::ListModelsRequest(), &models).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  grpc::ClientContext generate_context;
  tandem::v1::GenerateRequest request;
  request.set_text("hello");
  auto reader = inference->Generate(&generate_context, request);
  tandem::v1::GenerateResponse response;
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  (*frontend)->drainAndStop(std::chrono::milliseconds(0));
}

// the status of GET `path` on 127.0.0.1:port (0 when there is no answer).
int httpStatus(int port, const std::string& path) {
  auto client = http::testing::RawClient::connect(port);
  if (client == nullptr) return 0;
  if (!client->send("GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")) return 0;
  auto response = client->readResponse();
  return response ? response->status : 0;
}

// the status byte of grpc.health.v1.Health/Check for the server ("" service):
// 1 SERVING, 2 NOT_SERVING, -1 when the call failed.
int grpcHealth(int port) {
  grpc::GenericStub generic(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::Slice empty_message("", 0);  // HealthCheckRequest{service: ""} has no bytes
  grpc::ByteBuffer request(&empty_message, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                    &response, [&](grpc::Status st) { done.set_value(st); });
  if (!done.get_future().get().ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  return bytes.size() == 2 && bytes[0] == '\x08' ? bytes[1] : -1;
}

TEST(RouterFrontendTest, HealthIsNotReadyWhileNoDecodeWorkerIsHealthy) {
  using namespace std::chrono_literals;
  testing::FakeWorker d1(testing::FakeWorkerConfig{.worker_id = "d1"});
  testing::FakeWorker p1(testing::FakeWorkerConfig{.worker_id = "p1", .role = "prefill"});
  d1.start();
  p1.start();
  WorkerPoolOptions pool_options;
  pool_options.poll_interval = 30ms;
  pool_options.rpc_deadline = 300ms;
  WorkerPool pool(pool_options, nullptr);
  pool.start();
  ASSERT_TRUE(pool.registerWorker(d1.info()).ok());
  ASSERT_TRUE(pool.registerWorker(p1.info()).ok());
  pool.pollOnce();
  RemoteGenerator generator(RemoteGeneratorOptions{}, &pool, nullptr, nullptr);
  FrontendOptions options;
  options.http_port = 0;
  options.grpc_port = 0;
  options.grpc_at_start = true;
  absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
  ASSERT_TRUE(frontend.ok()) << frontend.status();
  const int port = (*frontend)->httpPort();
  const int grpc_port = (*frontend)->grpcPort();
  EXPECT_EQ(httpStatus(port, "/health"), 503);  // no model yet
  EXPECT_EQ(grpcHealth(grpc_port), 2);
  absl::StatusOr<ServedModelPtr> model =
      ServedModel::load(tandem::testing::storiesGguf(), "stories", 512);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*frontend)->serve(std::move(*model), &generator).ok());
  EXPECT_EQ(httpStatus(port, "/health"), 200);
  EXPECT_EQ(grpcHealth(grpc_port), 1);

  // the only decode worker goes away: not ready (a prefill worker alone
  // cannot serve), while /live still answers.
  d1.shutdown();
  EXPECT_TRUE(testing::waitFor([&] { return httpStatus(port, "/health") == 503; }));
  EXPECT_EQ(httpStatus(port, "/live"), 200);
  // gRPC health follows within the frontend's 1 s housekeeping tick.
  EXPECT_TRUE(testing::waitFor([&] { return grpcHealth(grpc_port) == 2; }));
  // it comes back on the same address: ready again.
  d1.start();
  EXPECT_TRUE(testing::waitFor([&] { return httpStatus(port, "/health") == 200; }));
  EXPECT_TRUE(testing::waitFor([&] { return grpcHealth(grpc_port) == 1; }));

  (*frontend)->drainAndStop(0ms);
  generator.stop();
  pool.stop();
}

}  // namespace
}  // namespace tandem::router::cluster
