#include "common/grpc/reloadable_server_credentials.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "grpc/grpc.h"
#include "grpc/grpc_security.h"

namespace tandem::grpc_util {
namespace {

// what the fetcher of one credentials object reads. gRPC gives the fetcher
// no way to release its user data, and the core keeps calling it for as
// long as the server lives, also after the C++ credentials object is gone
// (ServerBuilder drops it once the server is built): so the state is found
// by id in a registry it never leaves (a few bytes per credentials made),
// and holds the store weakly — a store that is gone reads as "unchanged".
struct FetcherState {
  std::weak_ptr<tls::CertificateStore> store;
  uint64_t served_generation = 0;  // what gRPC has now; 0 = nothing yet
};

std::mutex& registryMutex() {
  static std::mutex mu;
  return mu;
}

std::unordered_map<uintptr_t, FetcherState>& registry() {
  static auto* states = new std::unordered_map<uintptr_t, FetcherState>();
  return *states;
}

uintptr_t registerState(tls::CertificateStorePtr store) {
  static uintptr_t next_id = 0;
  std::lock_guard lock(registryMutex());
  const uintptr_t id = ++next_id;
  registry().emplace(id, FetcherState{std::move(store), 0});
  return id;
}

// gRPC's certificate config fetcher: called when the credentials are first
// used and before every handshake.
grpc_ssl_certificate_config_reload_status fetchConfig(void* user_data,
                                                      grpc_ssl_server_certificate_config** config) {
  std::lock_guard lock(registryMutex());
  auto it = registry().find(reinterpret_cast<uintptr_t>(user_data));
  if (it == registry().end()) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  FetcherState& state = it->second;
  tls::CertificateStorePtr store = state.store.lock();
  if (store == nullptr) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  uint64_t generation = 0;
  std::shared_ptr<const tls::TlsMaterial> material = store->current(&generation);
  if (generation == state.served_generation) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  grpc_ssl_pem_key_cert_pair pair{material->key_pem.c_str(), material->cert_pem.c_str()};
  // gRPC 1.51 asserts that a fetched config names root certificates even
  // when client certificates are never asked for
  // (GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE): then the server's own chain
  // stands in, a valid PEM that is never consulted.
  const std::string& roots =
      material->client_ca_pem.empty() ? material->cert_pem : material->client_ca_pem;
  *config = grpc_ssl_server_certificate_config_create(roots.c_str(), &pair, 1);
  if (*config == nullptr) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
  state.served_generation = generation;
  return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
}

// grpc::ServerCredentials over the core's SSL credentials with a fetcher.
// gRPC 1.51's C++ API has no certificate provider we can feed on demand
// (FileWatcherCertificateProvider polls the files on its own schedule and
// cannot be told "now", nor refuse a bad pair by our rules), hence this
// thin wrapper of the stable core API.
class ReloadableServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit ReloadableServerCredentials(tls::CertificateStorePtr store) {
    const bool verify_clients = !store->current()->client_ca_pem.empty();
    id_ = registerState(std::move(store));
    grpc_ssl_server_credentials_options* options =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            verify_clients ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                           : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            fetchConfig, reinterpret_cast<void*>(id_));
    credentials_ = grpc_ssl_server_credentials_create_with_options(options);
  }
  ~ReloadableServerCredentials() override {
    if (credentials_ != nullptr) grpc_server_credentials_release(credentials_);
  }

  // grpc::ServerCredentials
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/) override {}

 private:
  // grpc::ServerCredentials: the port takes its own reference.
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    if (credentials_ == nullptr) return 0;
    return grpc_server_add_http2_port(server, addr.c_str(), credentials_);
  }

  uintptr_t id_ = 0;
  grpc_server_credentials* credentials_ = nullptr;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> reloadableServerCredentials(tls::CertificateStorePtr store) {
  return std::make_shared<ReloadableServerCredentials>(std::move(store));
}

}  // namespace tandem::grpc_util
