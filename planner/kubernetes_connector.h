// Connector `kubernetes`: the prefill and decode Deployments' scale
// subresource (GET/PUT /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale)
// over HTTPS with a bearer token (kube_config.h), no kubectl. The planner
// needs, in the namespace: apiGroups ["apps"], resources
// ["deployments/scale"], verbs ["get", "update"].
//
// How each answer of the API server is handled:
//   200 — done (GET: the count; PUT: accepted);
//   409 Conflict (another writer changed the Scale since the GET) — GET
//       again and PUT again, up to max_conflict_retries times;
//   401 — Unauthenticated: the token was refused;
//   403 — PermissionDenied, naming the verb, the deployment and the RBAC rule missing;
//   404 — NotFound, naming the deployment and namespace;
//   no answer (unreachable, TLS failure, timeout) — Unavailable, and the
//       connector backs off (common/backoff.h): calls before the backoff
//       has passed fail at once without touching the network; the first
//       call that gets an answer resets it.
// Scale-down is the Deployment's: Kubernetes picks the pods, marks them
// terminating (out of the Service's endpoints) and runs their preStop hook,
// then SIGTERMs them within terminationGracePeriodSeconds (planner/README.md
// states what the pod spec must hold for no request to be lost).
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "common/backoff.h"
#include "planner/connector.h"
#include "planner/kube_config.h"

namespace tandem::planner {

struct KubernetesConnectorOptions {
  KubeApiConfig api;
  std::string namespace_;           // "" = api.namespace_
  std::string prefill_deployment;   // "" = no prefill Deployment (its count is 0)
  std::string decode_deployment;
  std::chrono::milliseconds timeout{5000};
  int max_conflict_retries = 5;
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{60000};
};

class KubernetesConnector : public Connector {
 public:
  // InvalidArgument without a server, a namespace or a decode deployment.
  static absl::StatusOr<std::unique_ptr<KubernetesConnector>> create(KubernetesConnectorOptions options);

  // Connector
  const char* name() const override { return "kubernetes"; }
  // spec.replicas of each Deployment (what it is asked to run).
  absl::StatusOr<RoleCounts> current() override;
  // sets spec.replicas; see the table above for the errors.
  absl::Status scale(Role role, int target) override;

 private:
  struct Reply {
    int status = 0;
    std::string body;
  };
  explicit KubernetesConnector(KubernetesConnectorOptions options);
  const std::string& deployment(Role role) const;
  std::string scalePath(const std::string& deployment) const;
  // one call; Unavailable (and the backoff moved on) when no answer came.
  absl::StatusOr<Reply> call(const std::string& method, const std::string& path, const std::string& body);
  // 401/403/404 and other failures as a status naming the verb and deployment.
  absl::Status errorFor(const Reply& reply, const std::string& verb, const std::string& deployment) const;
  // GET the Scale: its spec.replicas and the whole object (for the PUT).
  absl::StatusOr<std::pair<int, std::string>> getScale(const std::string& deployment);

  const KubernetesConnectorOptions options_;
  std::mutex mu_;  // one call at a time; guards the backoff
  Backoff backoff_;
  std::chrono::steady_clock::time_point retry_at_{};
};

}  // namespace tandem::planner
