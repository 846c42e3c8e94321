// The manifests run: the rendered cpu-demo overlay started as local
// processes, exactly as the kubelet would start its containers (command,
// args with $(VAR)s expanded from env, envFrom and the downward API),
// each pod on a loopback address of its own (127.x.y.N) and its declared
// ports, Service names resolved through a private /etc/hosts (a mount
// namespace of this test) to the pods they select, Secret and emptyDir
// volumes materialized in a temporary directory. Each readiness, liveness
// and startup probe must pass; a completion goes through the router
// Service's port; the dashboard's and alerts' metrics must be in the real
// scrapes; then each preStop runs and the drain is checked, and SIGTERM
// ends each process cleanly within its grace period.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "common/process/child_process.h"
#include "gtest/gtest.h"
#include "tests/deploy/manifests.h"
#include "tests/test_paths.h"

namespace tandem::deploy_testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::steady_clock;

struct HttpResult {
  int status = 0;  // 0: no answer
  std::string body;
};

// one HTTP/1.1 exchange with ip:port (Connection: close).
HttpResult httpCall(const std::string& ip, int port, const std::string& method, const std::string& path,
                    const std::string& body = "") {
  HttpResult result;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return result;
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + ip + "\r\nConnection: close\r\n";
  if (!body.empty()) request += "Content-Type: application/json\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
  close(fd);
  std::smatch m;
  if (std::regex_search(response, m, std::regex("^HTTP/1\\.[01] (\\d+)"))) result.status = std::stoi(m[1]);
  const size_t head_end = response.find("\r\n\r\n");
  if (head_end != std::string::npos) result.body = response.substr(head_end + 4);
  if (response.find("Transfer-Encoding: chunked") != std::string::npos) {
    std::string decoded;
    for (size_t at = 0; at < result.body.size();) {
      const size_t eol = result.body.find("\r\n", at);
      if (eol == std::string::npos) break;
      const size_t len = std::stoul(result.body.substr(at, eol - at), nullptr, 16);
      if (len == 0) break;
      decoded += result.body.substr(eol + 2, len);
      at = eol + 2 + len + 2;
    }
    result.body = decoded;
  }
  return result;
}

bool waitUntil(const std::function<bool()>& condition, std::chrono::seconds timeout) {
  const auto end = steady_clock::now() + timeout;
  while (steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return condition();
}

// the metric names a Prometheus text exposition defines: its # TYPE lines
// and its samples (a histogram's _bucket/_sum/_count count as their own
// names too, as PromQL spells them).
std::set<std::string> metricNames(const std::string& text) {
  std::set<std::string> names;
  std::istringstream lines(text);
  static const std::regex kType("^# TYPE (\\S+) (\\S+)");
  static const std::regex kSample("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kType)) {
      names.insert(m[1]);
      if (m[2] == "histogram") {
        for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(m[1].str() + suffix);
      }
    } else if (std::regex_search(line, m, kSample)) {
      names.insert(m[1]);
    }
  }
  return names;
}

// every tandem metric a PromQL expression of the dashboard or the alert
// rules names.
std::set<std::string> metricsUsedByDashboardsAndAlerts() {
  std::set<std::string> exprs;
  std::function<void(const json&)> collect = [&](const json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == "expr" && v.is_string()) exprs.insert(v.get<std::string>());
        collect(v);
      }
    } else if (j.is_array()) {
      for (const json& v : j) collect(v);
    }
  };
  std::ifstream dash(tandem::testing::sourceDir() + "/deploy/grafana/tandem-dashboard.json");
  collect(json::parse(dash));
  std::ifstream rules(tandem::testing::sourceDir() + "/deploy/prometheus/tandem-alerts.yaml");
  std::stringstream text;
  text << rules.rdbuf();
  for (const json& doc : parseYamlDocuments(text.str())) collect(doc);
  std::set<std::string> names;
  static const std::regex kName("tandem:[a-zA-Z0-9_:]+");
  for (const std::string& e : exprs) {
    for (std::sregex_iterator it(e.begin(), e.end(), kName), end; it != end; ++it) names.insert(it->str());
  }
  return names;
}

// one container started as a process.
struct Pod {
  std::string deployment;
  std::string ip;
  json container;
  json pod_spec;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> mounts;  // mountPath -> local directory
  process::ChildProcessPtr process;
  std::string log;

  int port(const json& name_or_number) const {
    if (name_or_number.is_number()) return name_or_number.get<int>();
    for (const json& p : container["ports"]) {
      if (p["name"] == name_or_number) return p["containerPort"].get<int>();
    }
    return 0;
  }
  // an argument as this pod sees it: its own addresses are its loopback
  // address here, its mount paths the local directories.
  std::string localize(std::string arg) const {
    arg = expandVars(arg, env);
    arg = std::regex_replace(arg, std::regex("\\b0\\.0\\.0\\.0\\b|\\b127\\.0\\.0\\.1\\b"), ip);
    // the longest mount path that starts the value (once: the local
    // directories lie under /tmp, itself a mount path).
    const size_t value = arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos ? arg.find('=') + 1 : 0;
    size_t best = 0;
    for (const auto& [at, dir] : mounts) {
      if (arg.compare(value, at.size(), at) == 0 &&
          (arg.size() == value + at.size() || arg[value + at.size()] == '/') && at.size() > best) {
        best = at.size();
      }
    }
    if (best > 0) arg.replace(value, best, mounts.at(arg.substr(value, best)));
    if (arg == kImageBinary) arg = tandem::testing::tandemBinary();
    return arg;
  }
  std::string logText() const {
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str().substr(s.str().size() > 4000 ? s.str().size() - 4000 : 0);
  }
};

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

class ManifestsRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    objects_ = renderOverlay(overlayDir("cpu-demo"));
    ASSERT_FALSE(objects_.empty());
    dir_ = tandem::testing::makeTempDir();
    // a private mount namespace: /etc/hosts of this test and its children.
    ASSERT_EQ(unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS) needs root: " << strerror(errno);
    ASSERT_EQ(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << strerror(errno);
    std::mt19937 rng(std::random_device{}());
    prefix_ = "127." + std::to_string(16 + rng() % 200) + "." + std::to_string(rng() % 250) + ".";
    secret_ = "deploy-test-" + std::to_string(rng()) + std::to_string(rng());
  }
  void TearDown() override {
    for (Pod& p : pods_) {
      if (p.process != nullptr && !p.process->exited()) {
        p.process->signal(SIGKILL);
        while (!p.process->reap()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    umount(kServiceAccountDir);
    umount("/etc/hosts");
    fs::remove_all(dir_);
  }

  // the pods (one per Deployment replica), their addresses, and /etc/hosts
  // naming every Service (short and qualified) for the pods it selects.
  void planPods(bool with_planner) {
    int next = 2;
    for (const json& d : objectsOfKind(objects_, "Deployment")) {
      const std::string name = d["metadata"]["name"].get<std::string>();
      if (name == "tandem-planner" && !with_planner) continue;
      for (int r = 0; r < d["spec"]["replicas"].get<int>(); ++r) {
        Pod pod;
        pod.deployment = name;
        pod.ip = prefix_ + std::to_string(next++);
        pod.container = d["spec"]["template"]["spec"]["containers"][0];
        pod.pod_spec = d["spec"]["template"]["spec"];
        pod.env = containerEnv(pod.container, objects_, {{"status.podIP", pod.ip}, {"metadata.namespace", "tandem"}});
        pod.log = dir_ + "/" + name + "-" + std::to_string(r) + ".log";
        materializeVolumes(&pod);
        pods_.push_back(std::move(pod));
      }
    }
    std::ofstream hosts(dir_ + "/hosts");
    hosts << "127.0.0.1 localhost\n";
    for (const json& s : objectsOfKind(objects_, "Service")) {
      const std::string name = s["metadata"]["name"].get<std::string>();
      for (const Pod& p : pods_) {
        json labels;
        for (const json& d : objectsOfKind(objects_, "Deployment")) {
          if (d["metadata"]["name"] == p.deployment) labels = d["spec"]["template"]["metadata"]["labels"];
        }
        if (!selectorMatches(s["spec"]["selector"], labels)) continue;
        hosts << p.ip << " " << name << " " << name << ".tandem " << name << ".tandem.svc " << name
              << ".tandem.svc.cluster.local\n";
      }
    }
    hosts.close();
    ASSERT_EQ(mount((dir_ + "/hosts").c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr), 0) << strerror(errno);
    mountServiceAccount();
  }

  // the kubelet's part: a pod's service-account token, CA and namespace at
  // the well-known path (bound in this test's mount namespace; the empty
  // directory it binds onto stays behind under /run), and the API server's
  // address in every pod's environment. No API server answers there: the
  // planner must keep running, backing off, and serve its /metrics.
  void mountServiceAccount() {
    const std::string account = dir_ + "/serviceaccount";
    fs::create_directories(account);
    std::ofstream(account + "/token") << "deploy-test-token";
    std::ofstream(account + "/namespace") << "tandem";
    fs::copy_file("/etc/ssl/certs/ca-certificates.crt", account + "/ca.crt");
    fs::create_directories(kServiceAccountDir);
    ASSERT_EQ(mount(account.c_str(), kServiceAccountDir, nullptr, MS_BIND, nullptr), 0) << strerror(errno);
    for (Pod& p : pods_) {
      p.env["KUBERNETES_SERVICE_HOST"] = "127.0.0.1";
      p.env["KUBERNETES_SERVICE_PORT"] = "1";  // nothing listens: refused at once
    }
  }

  void materializeVolumes(Pod* pod) {
    std::map<std::string, json> volumes;
    for (const json& v : pod->pod_spec.value("volumes", json::array())) volumes[v["name"].get<std::string>()] = v;
    for (const json& m : pod->container.value("volumeMounts", json::array())) {
      const json& v = volumes.at(m["name"].get<std::string>());
      const std::string local = dir_ + "/" + pod->ip + m["mountPath"].get<std::string>();
      fs::create_directories(local);
      if (v.contains("secret")) {
        // the Secret deploy/README.md creates: key "secret".
        ASSERT_EQ(v["secret"]["secretName"], "tandem-cluster");
        std::ofstream(local + "/secret") << secret_;
      } else {
        ASSERT_TRUE(v.contains("emptyDir") || v.contains("ephemeral")) << v.dump();
      }
      pod->mounts[m["mountPath"].get<std::string>()] = local;
    }
  }

  void start(Pod* pod) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" >\"$LOG\" 2>&1", "sh"};
    for (const json& c : pod->container["command"]) argv.push_back(pod->localize(c.get<std::string>()));
    for (const json& a : pod->container["args"]) argv.push_back(pod->localize(a.get<std::string>()));
    process::SpawnOptions options;
    options.argv = argv;
    options.extra_env.push_back("LOG=" + pod->log);
    for (const auto& [k, v] : pod->env) options.extra_env.push_back(k + "=" + v);
    auto child = process::ChildProcess::spawn(options);
    ASSERT_TRUE(child.ok()) << child.status();
    pod->process = *std::move(child);
  }

  // every probe of the pod answers 200 (readiness last).
  void waitForProbes(Pod* pod) {
    for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
      if (!pod->container.contains(probe)) continue;
      const json& get = pod->container[probe]["httpGet"];
      const int port = pod->port(get["port"]);
      const std::string path = get["path"].get<std::string>();
      // (a process that exited fails at once)
      EXPECT_TRUE(waitUntil([&] { return pod->process->reap() || httpCall(pod->ip, port, "GET", path).status == 200; },
                            std::chrono::seconds(90)) && !pod->process->exited())
          << pod->deployment << " " << probe << " GET " << path << " on " << port << ":\n" << pod->logText();
    }
  }

  Pod* pod(const std::string& deployment) {
    for (Pod& p : pods_) {
      if (p.deployment == deployment) return &p;
    }
    return nullptr;
  }

  // the router Service's port `name`, as the Service maps it to the pod.
  int servicePort(const std::string& service, const std::string& name) {
    const json s = objectNamed(objects_, "Service", service);
    for (const json& p : s["spec"]["ports"]) {
      if (p["name"] == name) return pod("tandem-router")->port(p["targetPort"]);
    }
    return 0;
  }

  double metricValue(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return -1;
  }

  std::vector<json> objects_;
  std::string dir_;
  std::string prefix_;
  std::string secret_;
  std::vector<Pod> pods_;
};

TEST_F(ManifestsRunTest, CpuDemoServesACompletionThroughTheRouterServiceAndDrains) {
  const bool with_planner = !acceptedFlags({"planner", "run"}).empty();
  ASSERT_NO_FATAL_FAILURE(planPods(with_planner));
  for (Pod& p : pods_) ASSERT_NO_FATAL_FAILURE(start(&p));
  for (Pod& p : pods_) waitForProbes(&p);
  ASSERT_FALSE(HasFailure());

  // a completion through the router Service's http port; a long prompt
  // is prefilled on the prefill worker and its KV moved to decode.
  Pod* router = pod("tandem-router");
  const int http = servicePort("tandem-router", "http");
  // a worker's readiness says it serves, not that the router has taken
  // its registration and first health check: wait until the router sees
  // both roles healthy (else the long prompt is prefilled on decode).
  for (const char* role : {"prefill", "decode"}) {
    const std::string series = std::string("tandem:router_workers{role=\"") + role + "\",state=\"healthy\"}";
    EXPECT_TRUE(waitUntil([&] { return metricValue(httpCall(router->ip, http, "GET", "/metrics").body, series) >= 1; },
                          std::chrono::seconds(60)))
        << "the router never saw a healthy " << role << " worker:\n" << router->logText();
  }
  std::string long_prompt;
  for (int i = 0; i < 24; ++i) long_prompt += "Once upon a time there was a little dog. ";
  for (const std::string& prompt : {std::string("Once upon a time"), long_prompt}) {
    const json request = {{"model", "stories260K"}, {"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}};
    HttpResult r = httpCall(router->ip, http, "POST", "/v1/completions", request.dump());
    ASSERT_EQ(r.status, 200) << r.body << "\n" << router->logText();
    const json body = json::parse(r.body);
    EXPECT_FALSE(body["choices"][0]["text"].get<std::string>().empty());
  }
  Pod* prefill = pod("tandem-prefill");
  Pod* decode = pod("tandem-decode");
  const int prefill_metrics = prefill->port("metrics");
  const int decode_metrics = decode->port("metrics");
  EXPECT_NE(httpCall(prefill->ip, prefill_metrics, "GET", "/metrics").body.find("tandem:prefills_total{kind=\"served\"} 1"), std::string::npos);

  // every metric the dashboard and the alerts name is in a real scrape
  // (the planner's when the planner runs: ManifestsRun.PlannerRuns).
  std::set<std::string> exported;
  for (const auto& [ip, port] : std::vector<std::pair<std::string, int>>{
           {router->ip, servicePort("tandem-router", "metrics")}, {prefill->ip, prefill_metrics}, {decode->ip, decode_metrics}}) {
    const HttpResult r = httpCall(ip, port, "GET", "/metrics");
    ASSERT_EQ(r.status, 200);
    for (const std::string& n : metricNames(r.body)) exported.insert(n);
  }
  if (Pod* planner = pod("tandem-planner")) {
    for (const std::string& n : metricNames(httpCall(planner->ip, planner->port("metrics"), "GET", "/metrics").body)) exported.insert(n);
  }
  for (const std::string& used : metricsUsedByDashboardsAndAlerts()) {
    if (!with_planner && used.rfind("tandem:planner_", 0) == 0) continue;
    EXPECT_TRUE(exported.count(used)) << used << " is in deploy/grafana or deploy/prometheus but in no scrape";
  }

  // stopping, as the kubelet does: preStop, then SIGTERM, within the grace
  // period. Workers first: each leaves routing before it stops.
  const std::string router_metrics_port = std::to_string(http);
  for (const char* name : {"tandem-prefill", "tandem-decode", "tandem-planner", "tandem-router"}) {
    Pod* p = pod(name);
    if (p == nullptr) continue;
    const json pre_stop = p->container.value("lifecycle", json::object()).value("preStop", json::object());
    if (pre_stop.contains("exec")) {
      std::vector<std::string> argv;
      for (const json& a : pre_stop["exec"]["command"]) argv.push_back(p->localize(a.get<std::string>()));
      const CommandOutput out = runCommand(argv);
      EXPECT_EQ(out.exit_code, 0) << name << " preStop:\n" << out.output;
    } else if (pre_stop.contains("sleep")) {
      std::this_thread::sleep_for(std::chrono::seconds(pre_stop["sleep"]["seconds"].get<int>()));
    }
    if (p == prefill || p == decode) {
      // drained: not ready, and the router routes nothing to it any more.
      EXPECT_EQ(httpCall(p->ip, p->port("metrics"), "GET", "/health").status, 503) << name;
      const std::string role = p == prefill ? "prefill" : "decode";
      const std::string series = "tandem:router_workers{role=\"" + role + "\",state=\"healthy\"}";
      EXPECT_TRUE(waitUntil([&] { return metricValue(httpCall(router->ip, http, "GET", "/metrics").body, series) == 0; }, std::chrono::seconds(10)))
          << name << ": the router still routes to it";
    }
    p->process->signal(SIGTERM);
    const int grace = p->pod_spec["terminationGracePeriodSeconds"].get<int>();
    EXPECT_TRUE(waitUntil([&] { return p->process->reap(); }, std::chrono::seconds(grace))) << name << " outlived its grace period";
    EXPECT_TRUE(p->process->exitStatus().clean()) << name << ": " << p->process->exitStatus().describe() << "\n" << p->logText();
  }
}

// the planner's container is part of the run (and its metrics of the
// dashboard's check) once `tandem planner run` exists: the planner issue
// adds it.
TEST(ManifestsRun, PlannerContainerHasItsSubcommand) {
  EXPECT_FALSE(acceptedFlags({"planner", "run"}).empty())
      << "this binary has no `tandem planner run`: the cpu-demo's planner container cannot start";
}

}  // namespace
}  // namespace tandem::deploy_testing
