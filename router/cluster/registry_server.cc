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
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for the worker registry on ", address));
  }
  return s;
}

RegistryServer::~RegistryServer() { shutdown(std::chrono::milliseconds(0)); }

void RegistryServer::shutdown(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  server_.reset();
}

}  // namespace tandem::router::cluster
