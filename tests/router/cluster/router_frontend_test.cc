// the router's front door before its model is known: gRPC listens at
// start() with the Registry service, while tandem.v1.Inference answers
// UNAVAILABLE and HTTP /health is not ready.
#include "gtest/gtest.h"
#include "router/cluster/registry_service.h"
#include "router/frontend/frontend_server.h"
#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::router::cluster {
namespace {

TEST(RouterFrontendTest, RegistryServesBeforeTheModelWhileInferenceIsUnavailable) {
  WorkerPool pool(WorkerPoolOptions{}, nullptr);
  RegistryService registry(&pool);
  FrontendOptions options;
  options.http_port = 0;
  options.grpc_port = 0;
  options.grpc_at_start = true;
  options.extra_grpc_services = {&registry};
  absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
  ASSERT_TRUE(frontend.ok()) << frontend.status();
  ASSERT_GT((*frontend)->grpcPort(), 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*frontend)->grpcPort()),
                                     grpc::InsecureChannelCredentials());

  tandem::v1::WorkerInfo info;
  info.set_worker_id("d1");
  info.set_address("127.0.0.1:1");
  info.set_role("decode");
  grpc::ClientContext register_context;
  tandem::v1::RegisterResponse registered;
  ASSERT_TRUE(tandem::v1::Registry::NewStub(channel)
                  ->Register(&register_context, info, &registered).ok());
  ASSERT_EQ(pool.snapshot().size(), 1u);

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

}  // namespace
}  // namespace tandem::router::cluster
