#include "planner/kubernetes_connector.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tandem::planner {
namespace {

// the API server's Status message, or the body as it came.
std::string messageOf(const std::string& body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object() && json.contains("message") && json["message"].is_string()) {
    return json["message"].get<std::string>();
  }
  return body.substr(0, 300);
}

}  // namespace

absl::StatusOr<std::unique_ptr<KubernetesConnector>> KubernetesConnector::create(
    KubernetesConnectorOptions options) {
  if (options.api.server.empty()) return absl::InvalidArgumentError("kubernetes: no API server");
  if (options.namespace_.empty()) options.namespace_ = options.api.namespace_;
  if (options.namespace_.empty()) {
    return absl::InvalidArgumentError("kubernetes: no namespace (--namespace, or the pod's or kubeconfig's)");
  }
  if (options.decode_deployment.empty()) {
    return absl::InvalidArgumentError("kubernetes: --decode-deployment is required");
  }
  return std::unique_ptr<KubernetesConnector>(new KubernetesConnector(std::move(options)));
}

KubernetesConnector::KubernetesConnector(KubernetesConnectorOptions options)
    : options_(std::move(options)), backoff_(options_.backoff_initial, options_.backoff_max) {}

const std::string& KubernetesConnector::deployment(Role role) const {
  return role == Role::kPrefill ? options_.prefill_deployment : options_.decode_deployment;
}

std::string KubernetesConnector::scalePath(const std::string& deployment) const {
  return absl::StrCat("/apis/apps/v1/namespaces/", options_.namespace_, "/deployments/", deployment, "/scale");
}

absl::StatusOr<KubernetesConnector::Reply> KubernetesConnector::call(const std::string& method,
                                                                     const std::string& path,
                                                                     const std::string& body) {
  const auto now = std::chrono::steady_clock::now();
  if (now < retry_at_) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now);
    return absl::UnavailableError(absl::StrCat("kubernetes: the API server ", options_.api.server,
                                               " was unreachable; backing off, next try in ", wait.count(), " ms"));
  }
  absl::StatusOr<std::string> token = options_.api.bearerToken();
  if (!token.ok()) return token.status();
  HttpCall http{.method = method, .url = absl::StrCat(options_.api.server, path), .body = body,
                .timeout = options_.timeout, .tls = options_.api.tls};
  http.headers.emplace_back("Accept", "application/json");
  if (!body.empty()) http.headers.emplace_back("Content-Type", "application/json");
  if (!token->empty()) http.headers.emplace_back("Authorization", absl::StrCat("Bearer ", *token));
  absl::StatusOr<HttpReply> reply = httpCall(http);
  if (!reply.ok()) {
    const std::chrono::milliseconds wait = backoff_.next();
    retry_at_ = std::chrono::steady_clock::now() + wait;
    return absl::UnavailableError(absl::StrCat("kubernetes: ", reply.status().message(), "; backing off ",
                                               wait.count(), " ms"));
  }
  backoff_.reset();
  retry_at_ = {};
  return Reply{reply->status, std::move(reply->body)};
}

absl::Status KubernetesConnector::errorFor(const Reply& reply, const std::string& verb,
                                           const std::string& deployment) const {
  const std::string what = absl::StrCat(verb, " deployments/scale of ", options_.namespace_, "/", deployment);
  const std::string message = messageOf(reply.body);
  switch (reply.status) {
    case 401:
      return absl::UnauthenticatedError(absl::StrCat(
          "kubernetes: 401 Unauthorized on ", what, ": the API server refused the credentials (the "
          "service-account token is missing, expired or wrong; or the kubeconfig user's): ", message));
    case 403:
      return absl::PermissionDeniedError(absl::StrCat(
          "kubernetes: 403 Forbidden on ", what, ": RBAC is missing a Role bound to the planner's "
          "service account with apiGroups [\"apps\"], resources [\"deployments/scale\"], verbs [\"get\", "
          "\"update\"] in namespace ", options_.namespace_, ": ", message));
    case 404:
      return absl::NotFoundError(absl::StrCat("kubernetes: 404 on ", what, ": no deployment '", deployment,
                                              "' in namespace '", options_.namespace_,
                                              "' (check --namespace and --prefill-deployment/--decode-deployment): ",
                                              message));
    default:
      return absl::UnknownError(absl::StrCat("kubernetes: ", reply.status, " on ", what, ": ", message));
  }
}

absl::StatusOr<std::pair<int, std::string>> KubernetesConnector::getScale(const std::string& deployment) {
  absl::StatusOr<Reply> reply = call("GET", scalePath(deployment), "");
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) return errorFor(*reply, "get", deployment);
  const nlohmann::json scale = nlohmann::json::parse(reply->body, nullptr, false);
  if (!scale.is_object() || !scale.contains("spec") || !scale["spec"].is_object()) {
    return absl::InternalError(absl::StrCat("kubernetes: get ", deployment, "/scale: not a Scale object"));
  }
  const int replicas = scale["spec"].value("replicas", 0);
  return std::make_pair(replicas, reply->body);
}

absl::StatusOr<RoleCounts> KubernetesConnector::current() {
  std::lock_guard lock(mu_);
  RoleCounts counts;
  for (Role role : {Role::kPrefill, Role::kDecode}) {
    if (deployment(role).empty()) continue;
    absl::StatusOr<std::pair<int, std::string>> scale = getScale(deployment(role));
    if (!scale.ok()) return scale.status();
    counts[role] = scale->first;
  }
  return counts;
}

absl::Status KubernetesConnector::scale(Role role, int target) {
  if (target < 0) return absl::InvalidArgumentError("a worker count must be >= 0");
  const std::string& name = deployment(role);
  if (name.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("kubernetes: no ", roleName(role), " deployment to scale (--", roleName(role), "-deployment)"));
  }
  std::lock_guard lock(mu_);
  for (int attempt = 0; attempt <= options_.max_conflict_retries; ++attempt) {
    absl::StatusOr<std::pair<int, std::string>> scale = getScale(name);
    if (!scale.ok()) return scale.status();
    if (scale->first == target) return absl::OkStatus();
    // the object as read (its resourceVersion makes the PUT conditional).
    nlohmann::json object = nlohmann::json::parse(scale->second);
    object["spec"]["replicas"] = target;
    absl::StatusOr<Reply> put = call("PUT", scalePath(name), object.dump());
    if (!put.ok()) return put.status();
    if (put->status == 200 || put->status == 201) return absl::OkStatus();
    if (put->status != 409) return errorFor(*put, "update", name);
  }
  return absl::AbortedError(absl::StrCat("kubernetes: update deployments/scale of ", options_.namespace_, "/", name,
                                         ": still conflicting after ", options_.max_conflict_retries,
                                         " retries (another writer, e.g. an HPA, keeps changing it?)"));
}

}  // namespace tandem::planner
