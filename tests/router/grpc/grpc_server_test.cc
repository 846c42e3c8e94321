// The router's gRPC server beside tandem.v1.Inference: grpc.health.v1
// per service (Kubernetes' gRPC probes name the service) through a drain,
// and server reflection over v1 and v1alpha as grpcurl asks it (list the
// services, the file of a symbol). v1alpha is gRPC's own implementation and
// v1 tandem's: both are asked with the v1 messages, which are v1alpha's on
// the wire, and must answer alike.
#include "router/grpc/grpc_server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/impl/client_unary_call.h"
#include "tests/common/grpc/health_check_client.h"
#include "tests/router/generate/stories_serving.h"

namespace tandem::router {
namespace {

namespace reflection = grpc::reflection::v1;

class GrpcServerTest : public ::testing::Test {
 protected:
  GrpcServerTest() {
    admission_ = std::make_unique<Admission>(serving_.context(), AdmissionOptions{});
    absl::StatusOr<GrpcServerPtr> server = GrpcServer::start("127.0.0.1", 0, admission_.get());
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = std::move(*server);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
  }
  ~GrpcServerTest() override {
    server_->shutdown(std::chrono::milliseconds(0));
    admission_->stop();
  }

  std::string health(const std::string& service) {
    return grpc_util::testing::healthCheck(*channel_, service);
  }

  // asks `requests` in order on one ServerReflectionInfo stream of
  // `service` ("grpc.reflection.v1" or "grpc.reflection.v1alpha").
  std::vector<reflection::ServerReflectionResponse> reflect(
      const std::string& service, const std::vector<reflection::ServerReflectionRequest>& requests) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const std::string path = "/" + service + ".ServerReflection/ServerReflectionInfo";
    const grpc::internal::RpcMethod method(path.c_str(), grpc::internal::RpcMethod::BIDI_STREAMING);
    std::unique_ptr<grpc::ClientReaderWriter<reflection::ServerReflectionRequest,
                                             reflection::ServerReflectionResponse>>
        stream(grpc::internal::ClientReaderWriterFactory<
               reflection::ServerReflectionRequest,
               reflection::ServerReflectionResponse>::Create(channel_.get(), method, &context));
    std::vector<reflection::ServerReflectionResponse> responses;
    for (const reflection::ServerReflectionRequest& request : requests) {
      EXPECT_TRUE(stream->Write(request));
      reflection::ServerReflectionResponse response;
      EXPECT_TRUE(stream->Read(&response)) << service;
      responses.push_back(response);
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << service << ": " << status.error_message();
    return responses;
  }

  testing::StoriesServing serving_;
  std::unique_ptr<Admission> admission_;
  GrpcServerPtr server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(GrpcServerTest, HealthIsServingForTheServerAndForInferenceThenNotServingWhileDraining) {
  EXPECT_EQ(health(""), "SERVING");
  EXPECT_EQ(health("tandem.v1.Inference"), "SERVING");
  EXPECT_EQ(health("tandem.v1.Nope").substr(0, 10), "NOT_FOUND:");
  // no decode worker ready: not ready to serve, for both names.
  server_->setReady(false);
  EXPECT_EQ(health("tandem.v1.Inference"), "NOT_SERVING");
  server_->setReady(true);
  EXPECT_EQ(health("tandem.v1.Inference"), "SERVING");
  server_->setDraining();
  EXPECT_EQ(health(""), "NOT_SERVING");
  EXPECT_EQ(health("tandem.v1.Inference"), "NOT_SERVING");
  // a worker turning ready again does not undo the drain.
  server_->setReady(true);
  EXPECT_EQ(health("tandem.v1.Inference"), "NOT_SERVING");
}

TEST_F(GrpcServerTest, ReflectionV1AndV1alphaListTheSameServicesAndFiles) {
  reflection::ServerReflectionRequest list, symbol, missing, file;
  list.set_list_services("");
  symbol.set_file_containing_symbol("tandem.v1.Inference");
  missing.set_file_containing_symbol("tandem.v1.Nope");
  file.set_file_by_filename("grpc/reflection/v1/reflection.proto");
  std::vector<reflection::ServerReflectionResponse> answers[2];
  const std::string services[2] = {"grpc.reflection.v1", "grpc.reflection.v1alpha"};
  for (int i = 0; i < 2; ++i) answers[i] = reflect(services[i], {list, symbol, missing, file});
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(answers[i].size(), 4u);
    std::vector<std::string> names;
    for (const auto& s : answers[i][0].list_services_response().service()) names.push_back(s.name());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                                               "grpc.reflection.v1alpha.ServerReflection",
                                               "tandem.v1.Inference"}))
        << services[i];
    // the file declaring the service (it imports nothing).
    const auto& files = answers[i][1].file_descriptor_response().file_descriptor_proto();
    ASSERT_EQ(files.size(), 1) << services[i];
    google::protobuf::FileDescriptorProto proto;
    ASSERT_TRUE(proto.ParseFromString(files[0]));
    EXPECT_EQ(proto.name(), "tandem/v1/inference.proto");
    EXPECT_EQ(answers[i][1].original_request().file_containing_symbol(), "tandem.v1.Inference");
    EXPECT_EQ(answers[i][2].error_response().error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(answers[i][2].error_response().error_message(), "Symbol not found.");
  }
  // gRPC's v1alpha answers, byte for byte, what tandem's v1 answers.
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(answers[0][k].SerializeAsString(), answers[1][k].SerializeAsString()) << "request " << k;
  }
}

}  // namespace
}  // namespace tandem::router
