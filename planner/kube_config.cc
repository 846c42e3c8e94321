#include "planner/kube_config.h"

#include "common/mapped_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace tandem::planner {
namespace {

std::string resolvePath(const std::string& dir, const std::string& path) {
  return path.empty() || path.front() == '/' || dir.empty() ? path : absl::StrCat(dir, "/", path);
}

// the entry of list `key` (kubeconfig's clusters/contexts/users) named `name`.
YAML::Node named(const YAML::Node& root, const char* key, const std::string& name) {
  for (const YAML::Node& entry : root[key]) {
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry;
  }
  return YAML::Node();
}

std::string scalar(const YAML::Node& node, const char* key) {
  return node && node[key] && node[key].IsScalar() ? node[key].as<std::string>() : "";
}

// PEM from `<key>-data` (base64) or `<key>` (a file path).
absl::StatusOr<std::string> pemOf(const YAML::Node& node, const std::string& key, const std::string& dir) {
  const std::string data = scalar(node, absl::StrCat(key, "-data").c_str());
  if (!data.empty()) {
    std::string pem;
    if (!absl::Base64Unescape(data, &pem)) return absl::InvalidArgumentError(absl::StrCat(key, "-data is not base64"));
    return pem;
  }
  const std::string path = scalar(node, key.c_str());
  if (path.empty()) return std::string();
  return tandem::readFile(resolvePath(dir, path));
}

}  // namespace

absl::StatusOr<std::string> KubeApiConfig::bearerToken() const {
  if (token_file.empty()) return token;
  absl::StatusOr<std::string> text = tandem::readFile(token_file);
  if (!text.ok()) return absl::UnavailableError(absl::StrCat("the service-account token: ", text.status().message()));
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::StatusOr<KubeApiConfig> inClusterConfig(const std::string& account_dir, const std::string& host,
                                              const std::string& port) {
  std::string h = host, p = port;
  if (h.empty()) {
    const char* env = std::getenv("KUBERNETES_SERVICE_HOST");
    h = env != nullptr ? env : "";
  }
  if (p.empty()) {
    const char* env = std::getenv("KUBERNETES_SERVICE_PORT");
    p = env != nullptr ? env : "443";
  }
  if (h.empty()) {
    return absl::FailedPreconditionError(
        "not in a Kubernetes pod ($KUBERNETES_SERVICE_HOST is unset): give --kubeconfig");
  }
  KubeApiConfig config;
  config.server = absl::StrCat("https://", h.find(':') != std::string::npos ? absl::StrCat("[", h, "]") : h, ":", p);
  config.token_file = absl::StrCat(account_dir, "/token");
  absl::StatusOr<std::string> token = tandem::readFile(config.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no service-account token (", token.status().message(),
        "): is automountServiceAccountToken off for the planner's pod?"));
  }
  absl::StatusOr<std::string> ca = tandem::readFile(absl::StrCat(account_dir, "/ca.crt"));
  if (!ca.ok()) return absl::FailedPreconditionError(absl::StrCat("no cluster CA: ", ca.status().message()));
  config.tls.ca_pem = *ca;
  absl::StatusOr<std::string> ns = tandem::readFile(absl::StrCat(account_dir, "/namespace"));
  if (ns.ok()) config.namespace_ = std::string(absl::StripAsciiWhitespace(*ns));
  return config;
}

absl::StatusOr<KubeApiConfig> kubeconfigFile(const std::string& path, const std::string& context) {
  absl::StatusOr<std::string> text = tandem::readFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--kubeconfig: ", text.status().message()));
  const std::string dir = path.rfind('/') == std::string::npos ? "" : path.substr(0, path.rfind('/'));
  try {
    const YAML::Node root = YAML::Load(*text);
    const std::string context_name = context.empty() ? scalar(root, "current-context") : context;
    if (context_name.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no current-context"));
    const YAML::Node ctx = named(root, "contexts", context_name)["context"];
    if (!ctx) return absl::InvalidArgumentError(absl::StrCat(path, ": no context '", context_name, "'"));
    const std::string cluster_name = scalar(ctx, "cluster");
    const std::string user_name = scalar(ctx, "user");
    const YAML::Node cluster = named(root, "clusters", cluster_name)["cluster"];
    if (!cluster) return absl::InvalidArgumentError(absl::StrCat(path, ": no cluster '", cluster_name, "'"));
    KubeApiConfig config;
    config.server = scalar(cluster, "server");
    if (!absl::StartsWith(config.server, "https://")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": cluster '", cluster_name,
                                                     "' has no https server (got '", config.server, "')"));
    }
    absl::StatusOr<std::string> ca = pemOf(cluster, "certificate-authority", dir);
    if (!ca.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", ca.status().message()));
    config.tls.ca_pem = *ca;
    config.namespace_ = scalar(ctx, "namespace");
    if (!user_name.empty()) {
      const YAML::Node user = named(root, "users", user_name)["user"];
      if (!user) return absl::InvalidArgumentError(absl::StrCat(path, ": no user '", user_name, "'"));
      config.token = scalar(user, "token");
      const std::string token_file = scalar(user, "tokenFile");
      if (!token_file.empty()) config.token_file = resolvePath(dir, token_file);
      absl::StatusOr<std::string> cert = pemOf(user, "client-certificate", dir);
      absl::StatusOr<std::string> key = pemOf(user, "client-key", dir);
      if (!cert.ok() || !key.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": user '", user_name, "': ",
                                                       (!cert.ok() ? cert : key).status().message()));
      }
      config.tls.client_cert_pem = *cert;
      config.tls.client_key_pem = *key;
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a kubeconfig: ", e.what()));
  }
}

}  // namespace tandem::planner
