// How the processes of one tandem cluster (the router, prefill and decode
// workers) authenticate each other on their internal gRPC ports: the
// router's tandem.v1.Registry, each worker's tandem.v1.Worker API and its
// KV receiver (tandem.v1.KvTransfer). The public API (tandem.v1.Inference,
// the OpenAI HTTP API) never shares a port with them.
//
// Two mechanisms, each optional, both when given:
//  - a shared secret: every internal call carries it in the metadata entry
//    `x-tandem-cluster-secret` (not `authorization`, so a client's API key
//    is never mistaken for it), and every internal handler checks it first
//    (check(): UNAUTHENTICATED otherwise, compared in constant time). gRPC
//    1.51 cannot reject a call from a server interceptor, and an
//    AuthMetadataProcessor needs TLS, hence one check at the top of each
//    handler, always this function.
//  - mutual TLS: listeners present this process's certificate and require
//    and verify the peer's against the cluster CA; channels present theirs
//    and verify the server's (its certificate must name the host others
//    dial, as a DNS or IP subject alternative name). The certificate, key
//    and CA live in a tls::CertificateStore, the one the public front ends
//    use: reloadTls() (on SIGHUP) re-reads them, internal listeners present
//    and verify with the new ones at their next handshake
//    (reloadableServerCredentials), and channel() builds new channels with
//    them. gRPC 1.51 offers no channel credentials that could follow a
//    store, so whoever keeps a channel compares tlsGeneration() with the one
//    it was made at and makes a new channel when it differs; connections
//    already open keep their session either way.
// With neither, internal listeners may bind loopback addresses only
// (checkListenHost), unless the operator chose allow_insecure.
//
//   ASSIGN_OR_RETURN(ClusterAuthPtr auth, ClusterAuth::create(options));
//   RETURN_IF_ERROR(auth->checkListenHost(host));
//   builder.AddListeningPort(address, auth->serverCredentials(), &port);
//   ... in every handler:
//   if (grpc::Status s = auth->check(*context); !s.ok()) return rejected...(s);
//   ... and every channel to a peer:
//   auto stub = tandem::v1::Worker::NewStub(auth->channel(address));
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/tls/certificate_store.h"
#include "grpcpp/grpcpp.h"

namespace tandem::grpc_util {

// the metadata entry that carries the cluster secret.
inline constexpr char kClusterSecretKey[] = "x-tandem-cluster-secret";
// the environment variable a secret may come from (tandem serve hands its
// children the secret it generated this way, never on a command line).
inline constexpr char kClusterSecretEnv[] = "TANDEM_CLUSTER_SECRET";
// a secret shorter than this is refused (guessable).
inline constexpr size_t kMinClusterSecretBytes = 16;

struct ClusterAuthOptions {
  // the shared secret; empty = none. Printable ASCII without spaces
  // (0x21..0x7e), at least kMinClusterSecretBytes long.
  std::string secret;
  // PEM files: this process's certificate (chain), its private key, and the
  // CA certificate(s) every peer's certificate must chain to. All three or
  // none.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
  // lets an internal listener bind a non-loopback address with neither a
  // secret nor TLS: anyone who reaches it can then act as the cluster.
  bool allow_insecure = false;
};

class ClusterAuth;
using ClusterAuthPtr = std::shared_ptr<const ClusterAuth>;

class ClusterAuth {
 public:
  // reads the TLS files. InvalidArgument for a bad secret (too short,
  // bytes metadata cannot carry) or TLS files given partly; NotFound /
  // InvalidArgument for a TLS file that cannot be read or is empty.
  static absl::StatusOr<ClusterAuthPtr> create(const ClusterAuthOptions& options);
  // neither secret nor TLS, allow_insecure off: loopback listeners only.
  static ClusterAuthPtr none();

  // the secret from `secret_file` when given (its trailing whitespace and
  // newline dropped), else from $TANDEM_CLUSTER_SECRET, else "".
  // NotFound / InvalidArgument when the file cannot be read or is empty.
  static absl::StatusOr<std::string> readSecret(const std::string& secret_file);

  bool hasSecret() const { return !secret_.empty(); }
  bool hasTls() const { return tls_ != nullptr; }
  // calls are authenticated (a secret or mutual TLS).
  bool authenticated() const { return hasSecret() || hasTls(); }
  bool allowInsecure() const { return allow_insecure_; }

  // FailedPrecondition when an internal listener on `host` would take
  // unauthenticated calls from other machines: `host` is not loopback
  // (isLoopbackHost: wildcards count as not), and there is neither a
  // secret nor TLS, and allow_insecure is off. OK otherwise.
  absl::Status checkListenHost(std::string_view host) const;

  // what internal listeners listen with: TLS requiring and verifying
  // client certificates (whatever the TLS files held at the last
  // successful reloadTls(), at every new handshake), or plain (insecure)
  // transport.
  std::shared_ptr<grpc::ServerCredentials> serverCredentials() const;
  // a channel to the peer at `address` (host:port) whose calls carry the
  // secret (a client interceptor adds it), over mutual TLS when configured
  // with the certificate, key and CA current now (see tlsGeneration()).
  std::shared_ptr<grpc::Channel> channel(const std::string& address,
                                         const grpc::ChannelArguments& args = {}) const;

  // re-reads the TLS files (tls::CertificateStore::reload: the key must
  // match the certificate, the CA file must hold a certificate). On
  // success new handshakes of the internal listeners and channels made
  // from now on use them, and tlsGeneration() grows; on error nothing
  // changes. OK, doing nothing, without TLS. Thread-safe.
  absl::Status reloadTls() const;
  // 0 without TLS; else grows by one with every successful reloadTls(). A
  // channel made at another generation than the current one carries the
  // old certificate and should be replaced by a new channel().
  uint64_t tlsGeneration() const { return tls_ != nullptr ? tls_->generation() : 0; }
  // the TLS material in use (subject and serial for log lines); null
  // without TLS.
  std::shared_ptr<const tls::TlsMaterial> tlsMaterial() const;

  // OK when the call carries the secret (or none is configured; the TLS
  // handshake already verified the peer's certificate when TLS is on);
  // UNAUTHENTICATED otherwise. The first line of every internal handler.
  grpc::Status check(const grpc::ServerContextBase& context) const;

 private:
  ClusterAuth() = default;

  std::string secret_;
  tls::CertificateStorePtr tls_;  // null = no TLS; client_ca = the cluster CA
  bool allow_insecure_ = false;
};

}  // namespace tandem::grpc_util
