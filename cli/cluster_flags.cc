#include "cli/cluster_flags.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/escaping.h"
#include "common/status.h"

namespace tandem::cli {

void addClusterFlags(CLI::App* cmd, ClusterFlags* flags) {
  cmd->add_option("--cluster-secret-file", flags->secret_file,
                  "a file holding the cluster's shared secret (default: $TANDEM_CLUSTER_SECRET): "
                  "internal calls carry it, internal ports require it");
  cmd->add_option("--cluster-tls-cert", flags->options.tls_cert_file,
                  "PEM certificate of this process for mutual TLS between cluster processes "
                  "(with its key and the CA, re-read on SIGHUP)");
  cmd->add_option("--cluster-tls-key", flags->options.tls_key_file,
                  "PEM private key of --cluster-tls-cert");
  cmd->add_option("--cluster-tls-ca", flags->options.tls_ca_file,
                  "PEM CA certificate every cluster peer's certificate must chain to");
  cmd->add_flag("--allow-insecure-cluster", flags->options.allow_insecure,
                "let internal ports listen on non-loopback addresses without a secret or TLS "
                "(anyone who reaches them can act as the cluster)");
}

absl::StatusOr<grpc_util::ClusterAuthPtr> clusterAuth(const ClusterFlags& flags) {
  grpc_util::ClusterAuthOptions options = flags.options;
  ASSIGN_OR_RETURN(options.secret, grpc_util::ClusterAuth::readSecret(flags.secret_file));
  return grpc_util::ClusterAuth::create(options);
}

void warnIfUnauthenticated(const grpc_util::ClusterAuth& auth, const char* who) {
  if (!auth.authenticated()) {
    std::fprintf(stderr,
                 auth.allowInsecure()
                     ? "%s: WARNING: the cluster is unauthenticated (--allow-insecure-cluster): "
                       "anyone who reaches its internal ports can register workers or call them\n"
                     : "%s: the cluster is unauthenticated (no cluster secret or TLS): its "
                       "internal ports listen on loopback only\n",
                 who);
  }
}

void reloadClusterTls(const grpc_util::ClusterAuth& auth, const char* who) {
  if (!auth.hasTls()) return;
  if (absl::Status s = auth.reloadTls(); s.ok()) {
    const auto material = auth.tlsMaterial();
    std::fprintf(stderr,
                 "%s: SIGHUP: cluster TLS certificate re-read (%s, serial %s); new internal "
                 "connections use it\n",
                 who, material->subject.c_str(), material->serial.c_str());
  } else {
    std::fprintf(stderr, "%s: SIGHUP: keeping the cluster TLS certificate in use: %s\n", who,
                 s.ToString().c_str());
  }
  std::fflush(stderr);
}

absl::StatusOr<std::string> randomClusterSecret() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError("cannot read random bytes for the cluster secret");
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace tandem::cli
