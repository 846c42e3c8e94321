// How the processes of a cluster (router, workers) authenticate each other
// on their internal ports (common/grpc/cluster_auth.h), as flags shared by
// `tandem router` and `tandem worker`: --cluster-secret-file (or
// $TANDEM_CLUSTER_SECRET), --cluster-tls-cert/-key/-ca,
// --allow-insecure-cluster.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/grpc/cluster_auth.h"

namespace tandem::cli {

struct ClusterFlags {
  std::string secret_file;
  grpc_util::ClusterAuthOptions options;  // secret filled by clusterAuth()
};

void addClusterFlags(CLI::App* cmd, ClusterFlags* flags);

// the authentication the flags describe (the secret read from the file or
// the environment). Errors: ClusterAuth::readSecret's and ClusterAuth::create's.
absl::StatusOr<grpc_util::ClusterAuthPtr> clusterAuth(const ClusterFlags& flags);

// one warning line, as `who` ("tandem router"), when `auth` authenticates
// nothing; called once the internal listeners are up.
void warnIfUnauthenticated(const grpc_util::ClusterAuth& auth, const char* who);

// SIGHUP: re-reads the cluster's TLS certificate, key and CA when
// configured (ClusterAuth::reloadTls: internal listeners and new channels
// use them); a failure keeps what was in use. One line on stderr, as
// `who`, says what happened; nothing without cluster TLS.
void reloadClusterTls(const grpc_util::ClusterAuth& auth, const char* who);

// a fresh random secret: 32 bytes from the kernel's CSPRNG, as 64 hex digits.
absl::StatusOr<std::string> randomClusterSecret();

}  // namespace tandem::cli
