#include "common/grpc/cluster_auth.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc/reloadable_server_credentials.h"
#include "common/host_port.h"
#include "common/mapped_file.h"
#include "grpcpp/support/client_interceptor.h"

namespace tandem::grpc_util {
namespace {

absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// true when `received` equals `expected`; the time taken depends on the
// received length only, never on where the first difference lies.
bool constantTimeEquals(std::string_view received, std::string_view expected) {
  unsigned char diff = received.size() == expected.size() ? 0 : 1;
  if (expected.empty()) return received.empty();
  for (size_t i = 0; i < received.size(); ++i) {
    diff |= static_cast<unsigned char>(received[i]) ^
            static_cast<unsigned char>(expected[i % expected.size()]);
  }
  return diff == 0;
}

absl::Status checkSecret(const std::string& secret) {
  if (secret.empty()) return absl::OkStatus();
  if (secret.size() < kMinClusterSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the cluster secret has ", secret.size(),
                                                   " bytes; at least ", kMinClusterSecretBytes,
                                                   " are needed"));
  }
  for (char c : secret) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          "the cluster secret must be printable ASCII without spaces (e.g. 64 hex digits: "
          "openssl rand -hex 32)");
    }
  }
  return absl::OkStatus();
}

// adds the secret to every call's initial metadata.
class SecretInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit SecretInterceptor(const std::string* secret) : secret_(secret) {}

  // grpc::experimental::Interceptor
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kClusterSecretKey, *secret_);
    }
    methods->Proceed();
  }

 private:
  const std::string* secret_;
};

class SecretInterceptorFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  // the channel owns the factory, so the secret lives as long as the channel.
  explicit SecretInterceptorFactory(std::shared_ptr<const std::string> secret)
      : secret_(std::move(secret)) {}

  // grpc::experimental::ClientInterceptorFactoryInterface
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new SecretInterceptor(secret_.get());
  }

 private:
  std::shared_ptr<const std::string> secret_;
};

}  // namespace

absl::StatusOr<ClusterAuthPtr> ClusterAuth::create(const ClusterAuthOptions& options) {
  if (absl::Status s = checkSecret(options.secret); !s.ok()) return s;
  const int tls_files = !options.tls_cert_file.empty() + !options.tls_key_file.empty() +
                        !options.tls_ca_file.empty();
  if (tls_files != 0 && tls_files != 3) {
    return absl::InvalidArgumentError(
        "cluster TLS needs a certificate, its key and the CA certificate (all three)");
  }
  std::shared_ptr<ClusterAuth> auth(new ClusterAuth());
  auth->secret_ = options.secret;
  auth->allow_insecure_ = options.allow_insecure;
  if (tls_files == 3) {
    absl::StatusOr<tls::CertificateStorePtr> store = tls::CertificateStore::create(
        {options.tls_cert_file, options.tls_key_file, options.tls_ca_file});
    if (!store.ok()) return store.status();
    auth->tls_ = *std::move(store);
  }
  return auth;
}

ClusterAuthPtr ClusterAuth::none() {
  static const ClusterAuthPtr kNone(new ClusterAuth());
  return kNone;
}

absl::StatusOr<std::string> ClusterAuth::readSecret(const std::string& secret_file) {
  if (secret_file.empty()) {
    const char* env = std::getenv(kClusterSecretEnv);
    return std::string(env != nullptr ? env : "");
  }
  absl::StatusOr<std::string> text = readNamedFile(secret_file, "cluster secret");
  if (!text.ok()) return text.status();
  std::string secret = *std::move(text);
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t')) {
    secret.pop_back();
  }
  if (secret.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cluster secret file '", secret_file, "' holds no secret"));
  }
  return secret;
}

absl::Status ClusterAuth::checkListenHost(std::string_view host) const {
  if (authenticated() || allow_insecure_ || isLoopbackHost(host)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "an internal (cluster) port on '", av(host.empty() ? std::string_view("*") : host),
      "' would let anyone who reaches it register workers or call them: give a cluster secret "
      "(--cluster-secret-file FILE or $", kClusterSecretEnv,
      ") or --cluster-tls-cert/--cluster-tls-key/--cluster-tls-ca, bind a loopback address, "
      "or pass --allow-insecure-cluster"));
}

std::shared_ptr<grpc::ServerCredentials> ClusterAuth::serverCredentials() const {
  if (!hasTls()) return grpc::InsecureServerCredentials();
  // the store holds the cluster CA as its client CA: client certificates
  // are required and verified against it.
  return reloadableServerCredentials(tls_);
}

std::shared_ptr<grpc::Channel> ClusterAuth::channel(const std::string& address,
                                                    const grpc::ChannelArguments& args) const {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (hasTls()) {
    const std::shared_ptr<const tls::TlsMaterial> material = tls_->current();
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = material->client_ca_pem;
    options.pem_private_key = material->key_pem;
    options.pem_cert_chain = material->cert_pem;
    credentials = grpc::SslCredentials(options);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (!hasSecret()) return grpc::CreateCustomChannel(address, credentials, args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(
      std::make_unique<SecretInterceptorFactory>(std::make_shared<const std::string>(secret_)));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, credentials, args,
                                                                 std::move(interceptors));
}

absl::Status ClusterAuth::reloadTls() const {
  if (!hasTls()) return absl::OkStatus();
  return tls_->reload();
}

std::shared_ptr<const tls::TlsMaterial> ClusterAuth::tlsMaterial() const {
  return hasTls() ? tls_->current() : nullptr;
}

grpc::Status ClusterAuth::check(const grpc::ServerContextBase& context) const {
  if (secret_.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto [begin, end] = metadata.equal_range(grpc::string_ref(kClusterSecretKey));
  // exactly one value: a second one is not a way to try two guesses.
  if (begin != end && std::next(begin) == end &&
      constantTimeEquals(std::string_view(begin->second.data(), begin->second.size()), secret_)) {
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "this is an internal port of a tandem cluster: calls need the cluster secret");
}

}  // namespace tandem::grpc_util
