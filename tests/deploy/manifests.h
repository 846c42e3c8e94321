// The rendered Kubernetes manifests of deploy/k8s as JSON objects, and what
// the deploy tests ask of them: `kubectl kustomize` of an overlay, the pod
// templates of the Deployments, label selectors, $(VAR) expansion as the
// kubelet does it, and the flags a `tandem` subcommand accepts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tandem::deploy_testing {

using nlohmann::json;

// deploy/k8s/overlays/<name> in the repository, and the names of them all.
std::string overlayDir(const std::string& name);
std::vector<std::string> overlayNames();

// runs `kubectl kustomize DIR` and returns every rendered object (YAML
// documents converted to JSON: plain scalars become booleans, numbers or
// null as YAML 1.2's core schema reads them). Fails the calling test
// (ADD_FAILURE) and returns nothing when kubectl is missing or fails.
std::vector<json> renderOverlay(const std::string& dir);

// YAML text (one or more documents) as JSON values.
std::vector<json> parseYamlDocuments(const std::string& text);

// runs argv (argv[0] a path) with stdin from /dev/null; its exit code and
// stdout+stderr.
struct CommandOutput {
  int exit_code = -1;
  std::string output;
};
CommandOutput runCommand(const std::vector<std::string>& argv);

// the objects of `kind`, and the one of `kind` named `name` (null if none).
std::vector<json> objectsOfKind(const std::vector<json>& objects, const std::string& kind);
json objectNamed(const std::vector<json>& objects, const std::string& kind, const std::string& name);

// true when every matchLabels pair (a LabelSelector, or a plain map as a
// Service's selector) is in `labels`; matchExpressions are not supported
// (false).
bool selectorMatches(const json& selector, const json& labels);

// a container's environment as the kubelet builds it: envFrom ConfigMaps
// (from `objects`), then env values; fieldRefs from `field_refs` (e.g.
// "status.podIP" -> "10.0.0.7").
std::map<std::string, std::string> containerEnv(const json& container, const std::vector<json>& objects,
                                                const std::map<std::string, std::string>& field_refs);
// $(NAME) replaced by env's value (left as is when unset); $$ -> $.
std::string expandVars(const std::string& text, const std::map<std::string, std::string>& env);

// the leading words of args that name a tandem subcommand (["router"],
// ["worker", "drain"], ["planner", "run"]): those before the first "-...".
std::vector<std::string> subcommandOf(const std::vector<std::string>& args);
// the long flags (--name) `tandem SUBCOMMAND... --help` lists; empty when
// the subcommand does not exist (its --help fails).
std::vector<std::string> acceptedFlags(const std::vector<std::string>& subcommand);
// "--name" of "--name=value" / "--name"; "" for a word that is no flag.
std::string flagName(const std::string& arg);

// the image's path of the binary (every container's command[0]).
inline constexpr char kImageBinary[] = "/opt/tandem/bin/tandem";

}  // namespace tandem::deploy_testing
