#include "router/grpc/grpc_server.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "router/grpc/reflection_v1_service.h"

namespace tandem::router {

absl::StatusOr<GrpcServerPtr> GrpcServer::start(const std::string& host, int port,
                                                Admission* admission) {
  return start(host, port, admission, {});
}

absl::StatusOr<GrpcServerPtr> GrpcServer::start(const std::string& host, int port,
                                                Admission* admission,
                                                const std::vector<grpc::Service*>& extra_services,
                                                std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  GrpcServerPtr s(new GrpcServer());
  s->service_ = admission != nullptr ? std::make_unique<InferenceService>(admission)
                                     : std::make_unique<InferenceService>();
  grpc::ServerBuilder builder;
  // an IPv6 literal needs brackets in a gRPC address.
  const std::string address = host.find(':') != std::string::npos
                                  ? absl::StrCat("[", host, "]:", port)
                                  : absl::StrCat(host, ":", port);
  s->credentials_ = credentials != nullptr ? std::move(credentials) : grpc::InsecureServerCredentials();
  builder.AddListeningPort(address, s->credentials_, &s->port_);
  builder.RegisterService(s->service_.get());
  for (grpc::Service* service : extra_services) builder.RegisterService(service);
  addReflectionV1(builder);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  // health per service as well as the server's (""): Kubernetes' gRPC
  // probes name the service. SetServingStatus(bool) sets every service
  // known, so setReady and setDraining move both.
  grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService();
  health->SetServingStatus(tandem::v1::Inference::service_full_name(), admission != nullptr);
  health->SetServingStatus(admission != nullptr);
  s->serving_ = admission != nullptr;
  return s;
}

void GrpcServer::serve(Admission* admission) {
  service_->setAdmission(admission);
  serving_ = true;
  if (server_ != nullptr && !stopped_) server_->GetHealthCheckService()->SetServingStatus(true);
}

void GrpcServer::setReady(bool ready) {
  if (server_ == nullptr || stopped_ || !serving_ || draining_) return;
  if (ready_.exchange(ready ? 1 : 0) == (ready ? 1 : 0)) return;
  server_->GetHealthCheckService()->SetServingStatus(ready);
}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

void GrpcServer::setDraining() {
  draining_ = true;
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
}

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (stopped_ || server_ == nullptr) return;
  stopped_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace tandem::router
