// The Kubernetes manifests of deploy/k8s, rendered by `kubectl kustomize`
// for every overlay and checked offline: each object against the
// Kubernetes 1.30 JSON schema of its kind (tests/deploy/schemas), then what
// a schema cannot say: selectors select, ports are named ports containers
// expose, every flag is one the `tandem` subcommand accepts, the planner's
// Role grants exactly its connector's calls, pods are locked down.
#include <algorithm>
#include <fstream>
#include <set>

#include "gtest/gtest.h"
#include "tests/deploy/json_schema.h"
#include "tests/deploy/manifests.h"
#include "tests/test_paths.h"

namespace tandem::deploy_testing {
namespace {

// the schema file of an object: <kind>-<group's first word>-<version>.json
// (core kinds: <kind>-<version>.json), as in the generated schema set.
std::string schemaFile(const json& object) {
  std::string kind = object["kind"].get<std::string>();
  std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
  const std::string api = object["apiVersion"].get<std::string>();
  const size_t slash = api.find('/');
  std::string name = kind + "-";
  if (slash != std::string::npos) name += api.substr(0, std::min(api.find('.'), slash)) + "-";
  name += api.substr(slash == std::string::npos ? 0 : slash + 1);
  return tandem::testing::sourceDir() + "/tests/deploy/schemas/" + name + ".json";
}

std::string nameOf(const json& o) { return o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>(); }

// every pod template of the rendered Deployments, with its Deployment.
std::vector<json> deployments(const std::vector<json>& objects) { return objectsOfKind(objects, "Deployment"); }
const json& podSpec(const json& d) { return d["spec"]["template"]["spec"]; }
const json& podLabels(const json& d) { return d["spec"]["template"]["metadata"]["labels"]; }

// the named ports of the containers of `deployment`.
std::set<std::string> portNames(const json& deployment) {
  std::set<std::string> names;
  for (const json& c : podSpec(deployment)["containers"]) {
    for (const json& p : c.value("ports", json::array())) names.insert(p.value("name", ""));
  }
  return names;
}

class ManifestsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    objects_ = renderOverlay(overlayDir(GetParam()));
    ASSERT_FALSE(objects_.empty());
  }
  std::vector<json> objects_;
};

TEST_P(ManifestsTest, EveryObjectConformsToItsKubernetesSchema) {
  for (const json& o : objects_) {
    static std::map<std::string, json> schemas;  // parsed once per process
    const std::string file = schemaFile(o);
    if (!schemas.count(file)) {
      std::ifstream in(file);
      ASSERT_TRUE(in) << nameOf(o) << ": no schema " << file;
      schemas[file] = json::parse(in);
    }
    const json& schema = schemas[file];
    for (const std::string& e : validateJson(schema, o)) ADD_FAILURE() << nameOf(o) << ": " << e;
    EXPECT_EQ(o["metadata"].value("namespace", "tandem"), "tandem") << nameOf(o);
  }
}

TEST_P(ManifestsTest, SelectorsSelectWhatTheyAreFor) {
  for (const json& d : deployments(objects_)) {
    EXPECT_TRUE(selectorMatches(d["spec"]["selector"], podLabels(d))) << nameOf(d);
    for (const json& t : podSpec(d).value("topologySpreadConstraints", json::array())) {
      EXPECT_TRUE(selectorMatches(t["labelSelector"], podLabels(d))) << nameOf(d) << " topology spread";
    }
  }
  // a selector of these kinds selects at least one pod template.
  auto selectsPods = [&](const json& selector) {
    int n = 0;
    for (const json& d : deployments(objects_)) n += selectorMatches(selector, podLabels(d));
    return n;
  };
  for (const json& s : objectsOfKind(objects_, "Service")) EXPECT_GT(selectsPods(s["spec"]["selector"]), 0) << nameOf(s);
  for (const json& p : objectsOfKind(objects_, "PodDisruptionBudget")) EXPECT_EQ(selectsPods(p["spec"]["selector"]), 1) << nameOf(p);
  for (const json& p : objectsOfKind(objects_, "PodMonitor")) EXPECT_GT(selectsPods(p["spec"]["selector"]), 0) << nameOf(p);
  for (const json& n : objectsOfKind(objects_, "NetworkPolicy")) {
    EXPECT_GT(selectsPods(n["spec"]["podSelector"]), 0) << nameOf(n);
    for (const json& rule : n["spec"].value("ingress", json::array())) {
      for (const json& from : rule.value("from", json::array())) {
        if (from.contains("podSelector")) {
          EXPECT_GT(selectsPods(from["podSelector"]), 0) << nameOf(n) << " from";
        }
      }
    }
  }
  for (const json& m : objectsOfKind(objects_, "ServiceMonitor")) {
    int n = 0;
    for (const json& s : objectsOfKind(objects_, "Service")) n += selectorMatches(m["spec"]["selector"], s["metadata"]["labels"]);
    EXPECT_GT(n, 0) << nameOf(m);
  }
}

TEST_P(ManifestsTest, PortsAreNamedPortsTheContainersExpose) {
  for (const json& s : objectsOfKind(objects_, "Service")) {
    for (const json& port : s["spec"]["ports"]) {
      ASSERT_TRUE(port["targetPort"].is_string()) << nameOf(s) << ": targetPort by name";
      for (const json& d : deployments(objects_)) {
        if (!selectorMatches(s["spec"]["selector"], podLabels(d))) continue;
        EXPECT_TRUE(portNames(d).count(port["targetPort"].get<std::string>()))
            << nameOf(s) << " port " << port["name"] << " -> " << port["targetPort"] << ": not a port of " << nameOf(d);
      }
    }
  }
  for (const json& m : objectsOfKind(objects_, "ServiceMonitor")) {
    for (const json& e : m["spec"]["endpoints"]) {
      for (const json& s : objectsOfKind(objects_, "Service")) {
        if (!selectorMatches(m["spec"]["selector"], s["metadata"]["labels"])) continue;
        bool found = false;
        for (const json& p : s["spec"]["ports"]) found = found || p["name"] == e["port"];
        EXPECT_TRUE(found) << nameOf(m) << ": " << nameOf(s) << " has no port " << e["port"];
      }
    }
  }
  auto checkPods = [&](const json& owner, const json& selector, const std::string& port) {
    for (const json& d : deployments(objects_)) {
      if (selectorMatches(selector, podLabels(d))) {
        EXPECT_TRUE(portNames(d).count(port)) << nameOf(owner) << ": " << nameOf(d) << " has no port " << port;
      }
    }
  };
  for (const json& m : objectsOfKind(objects_, "PodMonitor")) {
    for (const json& e : m["spec"]["podMetricsEndpoints"]) checkPods(m, m["spec"]["selector"], e["port"].get<std::string>());
  }
  for (const json& n : objectsOfKind(objects_, "NetworkPolicy")) {
    for (const json& rule : n["spec"].value("ingress", json::array())) {
      for (const json& p : rule.value("ports", json::array())) {
        ASSERT_TRUE(p["port"].is_string()) << nameOf(n) << ": ports by name";
        checkPods(n, n["spec"]["podSelector"], p["port"].get<std::string>());
      }
    }
  }
  // probes name a port of their own container; the paths are ones tandem
  // serves (ManifestsRun polls each for real).
  const std::set<std::string> kServed = {"/health", "/live", "/metrics"};
  for (const json& d : deployments(objects_)) {
    for (const json& c : podSpec(d)["containers"]) {
      for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
        if (!c.contains(probe)) continue;
        const json& get = c[probe]["httpGet"];
        EXPECT_TRUE(portNames(d).count(get["port"].get<std::string>())) << nameOf(d) << " " << probe;
        EXPECT_TRUE(kServed.count(get["path"].get<std::string>())) << nameOf(d) << " " << probe;
      }
      EXPECT_TRUE(c.contains("readinessProbe") && c.contains("livenessProbe")) << nameOf(d);
    }
  }
}

// every flag in every container's args (and preStop commands) is one the
// `tandem` subcommand accepts; the planner's comes with the planner issue.
TEST_P(ManifestsTest, EveryFlagIsAcceptedByItsTandemSubcommand) {
  std::vector<std::pair<std::string, std::vector<std::string>>> commands;
  for (const json& d : deployments(objects_)) {
    for (const json& c : podSpec(d)["containers"]) {
      ASSERT_EQ(c["command"], json::array({kImageBinary})) << nameOf(d);
      commands.push_back({nameOf(d) + " args", c["args"].get<std::vector<std::string>>()});
      if (c.contains("lifecycle") && c["lifecycle"]["preStop"].contains("exec")) {
        std::vector<std::string> argv = c["lifecycle"]["preStop"]["exec"]["command"].get<std::vector<std::string>>();
        ASSERT_EQ(argv.at(0), kImageBinary) << nameOf(d) << " preStop";
        commands.push_back({nameOf(d) + " preStop", std::vector<std::string>(argv.begin() + 1, argv.end())});
      }
    }
  }
  for (const auto& [what, args] : commands) {
    const std::vector<std::string> sub = subcommandOf(args);
    const std::vector<std::string> accepted = acceptedFlags(sub);
    std::string spelled;
    for (const std::string& w : sub) spelled += " " + w;
    if (accepted.empty()) {
      ADD_FAILURE() << what << ": `tandem" << spelled << " --help` fails: this binary has no `tandem" << spelled << "`";
      continue;
    }
    for (const std::string& a : args) {
      const std::string flag = flagName(a);
      if (a.rfind("-", 0) == 0) {
        EXPECT_FALSE(flag.empty()) << what << ": " << a << " (give flags as --name=value)";
        EXPECT_NE(a.find('='), std::string::npos) << what << ": " << a << " (give flags as --name=value)";
      }
      if (!flag.empty()) {
        EXPECT_TRUE(std::count(accepted.begin(), accepted.end(), flag) > 0)
            << what << ": `tandem" << spelled << "` does not accept " << flag;
      }
    }
  }
}

// the planner's kubernetes connector calls GET, PUT and PATCH on the
// prefill and decode Deployments' scale subresource in its own namespace:
// its Role grants get, update and patch on deployments/scale of those two
// and nothing else; only the planner's pod carries a token.
TEST_P(ManifestsTest, PlannerRoleGrantsExactlyTheScaleCalls) {
  const json planner = objectNamed(objects_, "Deployment", "tandem-planner");
  ASSERT_FALSE(planner.is_null());
  std::map<std::string, std::string> flags;
  for (const json& a : podSpec(planner)["containers"][0]["args"]) {
    const std::string s = a.get<std::string>();
    if (s.find('=') != std::string::npos) flags[flagName(s)] = s.substr(s.find('=') + 1);
  }
  EXPECT_EQ(flags["--connector"], "kubernetes");
  const std::string sa = podSpec(planner)["serviceAccountName"].get<std::string>();
  EXPECT_FALSE(objectNamed(objects_, "ServiceAccount", sa).is_null());
  const std::vector<std::string> scaled = {flags["--prefill-deployment"], flags["--decode-deployment"]};
  for (const std::string& name : scaled) EXPECT_FALSE(objectNamed(objects_, "Deployment", name).is_null()) << name;

  EXPECT_TRUE(objectsOfKind(objects_, "ClusterRole").empty());
  EXPECT_TRUE(objectsOfKind(objects_, "ClusterRoleBinding").empty());
  const std::vector<json> roles = objectsOfKind(objects_, "Role");
  ASSERT_EQ(roles.size(), 1u);
  const json& rules = roles[0]["rules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["apiGroups"], json::array({"apps"}));
  EXPECT_EQ(rules[0]["resources"], json::array({"deployments/scale"}));
  std::set<std::string> verbs = rules[0]["verbs"].get<std::set<std::string>>();
  EXPECT_EQ(verbs, (std::set<std::string>{"get", "patch", "update"}));
  EXPECT_EQ(rules[0]["resourceNames"].get<std::set<std::string>>(), std::set<std::string>(scaled.begin(), scaled.end()));

  const std::vector<json> bindings = objectsOfKind(objects_, "RoleBinding");
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0]["roleRef"]["name"], roles[0]["metadata"]["name"]);
  EXPECT_EQ(bindings[0]["subjects"], json::parse(R"([{"kind": "ServiceAccount", "name": ")" + sa + R"(", "namespace": "tandem"}])"));
  for (const json& d : deployments(objects_)) {
    EXPECT_EQ(podSpec(d).value("automountServiceAccountToken", true), d == planner) << nameOf(d);
  }
}

TEST_P(ManifestsTest, PodsRunLockedDown) {
  for (const json& d : deployments(objects_)) {
    const json& pod = podSpec(d);
    EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true) << nameOf(d);
    EXPECT_NE(pod["securityContext"].value("runAsUser", 0), 0) << nameOf(d);
    EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault") << nameOf(d);
    EXPECT_GE(pod["terminationGracePeriodSeconds"].get<int>(), 30) << nameOf(d);
    for (const json& c : pod["containers"]) {
      EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true) << nameOf(d);
      EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false) << nameOf(d);
      EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"})) << nameOf(d);
      EXPECT_FALSE(c["securityContext"].contains("privileged")) << nameOf(d);
    }
  }
}

// the cluster secret is a file from the Secret volume (never a flag value
// or an env var); every file path in args lies on a mounted volume; the
// workers drain on preStop within their grace period; --kv-disk-path is
// its own volume.
TEST_P(ManifestsTest, FilesComeFromVolumesAndWorkersDrain) {
  for (const json& d : deployments(objects_)) {
    const json& pod = podSpec(d);
    for (const json& c : pod["containers"]) {
      std::map<std::string, json> volumes;
      for (const json& v : pod.value("volumes", json::array())) volumes[v["name"].get<std::string>()] = v;
      auto volumeAt = [&](const std::string& path) -> json {
        for (const json& m : c.value("volumeMounts", json::array())) {
          const std::string at = m["mountPath"].get<std::string>();
          if (path == at || path.rfind(at + "/", 0) == 0) return volumes.at(m["name"].get<std::string>());
        }
        return nullptr;
      };
      for (const json& e : c.value("env", json::array())) EXPECT_EQ(e["name"].get<std::string>().find("SECRET"), std::string::npos) << nameOf(d);
      for (const json& a : c["args"]) {
        const std::string s = a.get<std::string>();
        const std::string flag = flagName(s);
        const std::string value = s.substr(s.find('=') + 1);
        if (flag == "--cluster-secret-file") {
          const json v = volumeAt(value);
          ASSERT_FALSE(v.is_null()) << nameOf(d) << ": " << value << " is on no volume";
          EXPECT_EQ(v["secret"]["secretName"], "tandem-cluster") << nameOf(d);
          EXPECT_EQ(value.substr(value.rfind('/') + 1), "secret") << nameOf(d) << ": the Secret's key is 'secret'";
        }
        if (flag == "--kv-disk-path") {
          const json v = volumeAt(value);
          ASSERT_FALSE(v.is_null()) << nameOf(d) << ": " << value << " is on no volume";
          EXPECT_TRUE(v.contains("emptyDir") || v.contains("ephemeral")) << nameOf(d);
        }
        if (flag == "--model" && value.rfind("/", 0) == 0) {
          EXPECT_FALSE(volumeAt(value).is_null()) << nameOf(d);
        }
      }
      if (d["metadata"]["labels"].value("app.kubernetes.io/component", "") == "prefill" ||
          d["metadata"]["labels"].value("app.kubernetes.io/component", "") == "decode") {
        const json argv = c["lifecycle"]["preStop"]["exec"]["command"];
        ASSERT_TRUE(argv.is_array()) << nameOf(d);
        EXPECT_EQ(argv[1], "worker");
        EXPECT_EQ(argv[2], "drain");
        int timeout = 0;
        for (const json& a : argv) {
          if (flagName(a.get<std::string>()) == "--timeout") timeout = std::stoi(a.get<std::string>().substr(10));
        }
        EXPECT_GT(pod["terminationGracePeriodSeconds"].get<int>(), timeout + 20) << nameOf(d) << ": preStop + --drain-timeout";
      }
    }
  }
}

TEST(ManifestsOverlays, Mi300xWorkersEachTakeOneAmdGpuAndNvmeForTheDiskTier) {
  const std::vector<json> objects = renderOverlay(overlayDir("mi300x"));
  int gpus = 0;
  for (const char* name : {"tandem-prefill", "tandem-decode"}) {
    const json d = objectNamed(objects, "Deployment", name);
    ASSERT_FALSE(d.is_null());
    const json& c = podSpec(d)["containers"][0];
    EXPECT_EQ(c["resources"]["limits"]["amd.com/gpu"], 1) << name;
    gpus += d["spec"]["replicas"].get<int>();
    bool nvme = false;
    for (const json& v : podSpec(d)["volumes"]) {
      nvme = nvme || (v["name"] == "kv-disk" && v.contains("ephemeral") && !v.contains("emptyDir"));
    }
    EXPECT_TRUE(nvme) << name;
  }
  EXPECT_EQ(gpus, 8) << "one node of 8 MI300X";
  const std::vector<json> cpu = renderOverlay(overlayDir("cpu-demo"));
  for (const json& d : deployments(cpu)) {
    for (const json& c : podSpec(d)["containers"]) EXPECT_FALSE(c.value("resources", json::object()).dump().find("gpu") != std::string::npos) << nameOf(d);
  }
}

INSTANTIATE_TEST_SUITE_P(Overlays, ManifestsTest, ::testing::ValuesIn(overlayNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace tandem::deploy_testing

namespace tandem::deploy_testing {
namespace {

// the validator rejects what the strict schemas forbid (so a pass above
// means something): a field the kind does not have, a wrong type, an
// int-or-string that is neither.
TEST(JsonSchemaTest, RejectsUnknownFieldsWrongTypesAndBadOneOf) {
  std::ifstream in(tandem::testing::sourceDir() + "/tests/deploy/schemas/service-v1.json");
  const json schema = json::parse(in);
  json service = json::parse(R"({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
    "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})");
  EXPECT_TRUE(validateJson(schema, service).empty());
  json unknown = service;
  unknown["spec"]["portz"] = json::array();
  EXPECT_EQ(validateJson(schema, unknown), std::vector<std::string>{"spec.portz: not allowed here"});
  json wrong_type = service;
  wrong_type["spec"]["ports"][0]["port"] = "80";
  EXPECT_FALSE(validateJson(schema, wrong_type).empty());
  json bad_target = service;
  bad_target["spec"]["ports"][0]["targetPort"] = true;
  EXPECT_FALSE(validateJson(schema, bad_target).empty());
  json missing = service;
  missing["spec"]["ports"][0].erase("port");
  EXPECT_FALSE(validateJson(schema, missing).empty());
}

}  // namespace
}  // namespace tandem::deploy_testing
