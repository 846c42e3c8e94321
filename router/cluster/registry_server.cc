#include "router/cluster/registry_server.h"

#include "absl/strings/str_cat.h"
#include "common/host_port.h"

namespace tandem::router::cluster {

absl::StatusOr<RegistryServerPtr> RegistryServer::start(const RegistryServerOptions& options,
                                                        WorkerPool* pool) {
  if (absl::Status s = options.auth->checkListenHost(options.host); !s.ok()) return s;
  RegistryServerPtr s(new RegistryServer());
  s->service_ = std::make_unique<RegistryService>(pool, options.auth);
  const std::string address = formatHostPort(options.host, options.port);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, options.auth->serverCredentials(), &s->port_);
  builder.RegisterService(s->service_->service());
  std::unique_ptr<grpc::ServerCompletionQueue> queue = builder.AddCompletionQueue();
  grpc::ServerCompletionQueue* calls = queue.get();
  s->server_ = builder.BuildAndStart();
  s->calls_ = std::make_unique<grpc_util::CompletionThread>("registry", std::move(queue));
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for the worker registry on ", address));
  }
  s->service_->serve(s->calls_.get(), calls);
  return s;
}

RegistryServer::~RegistryServer() { shutdown(std::chrono::milliseconds(0)); }

void RegistryServer::shutdown(std::chrono::milliseconds grace) {
  if (calls_ == nullptr) return;
  // the server first (calls awaited end, those in progress are answered on
  // the completion thread until `grace`), then its queue drained, then
  // the server destroyed.
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + grace);
  calls_->shutdown();
  server_.reset();
  calls_.reset();
}

}  // namespace tandem::router::cluster
