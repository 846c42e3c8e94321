// How the kubernetes connector reaches and authenticates to the API
// server, without kubectl: in a pod, the service account's token, CA and
// namespace (/var/run/secrets/kubernetes.io/serviceaccount) and
// $KUBERNETES_SERVICE_HOST/PORT; outside, a kubeconfig file (its current
// context, or one named: the cluster's server and CA, the user's token or
// client certificate, the context's namespace).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "planner/http_client.h"

namespace tandem::planner {

struct KubeApiConfig {
  std::string server;  // https://HOST:PORT
  TlsSettings tls;     // the cluster's CA; a client certificate when the user has one
  // the bearer token, or a file holding it, re-read on every call (the
  // kubelet rotates projected service-account tokens); both empty = none.
  std::string token;
  std::string token_file;
  std::string namespace_;  // the default namespace ("" when none is said)

  // the bearer token now ("" when none). Unavailable when token_file cannot be read.
  absl::StatusOr<std::string> bearerToken() const;
};

// the in-cluster configuration under `account_dir` (the service account's
// mount) with the API server from `host` and `port` (the environment's
// KUBERNETES_SERVICE_HOST/PORT when empty). FailedPrecondition (saying
// which) when not in a pod: no host in the environment, no token or CA.
absl::StatusOr<KubeApiConfig> inClusterConfig(
    const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount",
    const std::string& host = "", const std::string& port = "");

// the configuration of `context` ("" = current-context) in the kubeconfig
// file at `path`. Paths in it are relative to the file's directory.
// InvalidArgument for a file that cannot be read or parsed, a context,
// cluster or user it does not define, or a cluster that is not https.
absl::StatusOr<KubeApiConfig> kubeconfigFile(const std::string& path, const std::string& context = "");

}  // namespace tandem::planner
