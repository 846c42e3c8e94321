#include "planner/kubernetes_connector.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/planner/fake_kube_api_server.h"
#include "tests/test_paths.h"

namespace tandem::planner {
namespace {

using testing::FakeKubeApiServer;
using namespace std::chrono_literals;

constexpr char kToken[] = "test-token-0123456789";
constexpr char kNamespace[] = "inference";
constexpr char kScalePath[] = "/apis/apps/v1/namespaces/inference/deployments/tandem-decode/scale";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// the test CA and the API server's certificate, made once for the suite.
class KubernetesConnectorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(tandem::testing::makeTempDir());
    const std::string script = tandem::testing::sourceDir() + "/tests/planner/make_test_ca.sh";
    ASSERT_EQ(std::system(("bash " + script + " " + *dir_).c_str()), 0) << "openssl failed";
  }
  static void TearDownTestSuite() {
    std::system(("rm -rf " + *dir_).c_str());
    delete dir_;
  }

  void SetUp() override {
    server_ = std::make_unique<FakeKubeApiServer>(readFile(*dir_ + "/server.pem"), readFile(*dir_ + "/server.key"),
                                                  kToken, kNamespace);
    server_->addDeployment("tandem-prefill", 1);
    server_->addDeployment("tandem-decode", 2);
    server_->start();
  }

  KubernetesConnectorOptions options(const std::string& token = kToken) {
    KubernetesConnectorOptions o;
    o.api.server = absl::StrCat("https://127.0.0.1:", server_->port());
    o.api.tls.ca_pem = readFile(*dir_ + "/ca.pem");
    o.api.token = token;
    o.namespace_ = kNamespace;
    o.prefill_deployment = "tandem-prefill";
    o.decode_deployment = "tandem-decode";
    o.backoff_initial = 200ms;
    o.backoff_max = 400ms;
    return o;
  }
  std::unique_ptr<KubernetesConnector> connector(KubernetesConnectorOptions o) {
    auto c = KubernetesConnector::create(std::move(o));
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  static std::string* dir_;
  std::unique_ptr<FakeKubeApiServer> server_;
};
std::string* KubernetesConnectorTest::dir_ = nullptr;

TEST_F(KubernetesConnectorTest, ReadsAndScalesTheDeploymentsWithTheBearerToken) {
  auto c = connector(options());
  absl::StatusOr<RoleCounts> counts = c->current();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts, (RoleCounts{1, 2}));
  ASSERT_TRUE(c->scale(Role::kDecode, 4).ok());
  EXPECT_EQ(server_->replicas("tandem-decode"), 4);
  EXPECT_EQ(server_->replicas("tandem-prefill"), 1);
  const std::vector<testing::SeenRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), 4u);  // GET prefill, GET decode, GET decode, PUT decode
  EXPECT_EQ(seen[2].method, "GET");
  EXPECT_EQ(seen[3].method, "PUT");
  EXPECT_EQ(seen[3].target, kScalePath);
  EXPECT_EQ(seen[3].answered, 200);
  for (const auto& r : seen) EXPECT_EQ(r.authorization, absl::StrCat("Bearer ", kToken));
  // already there: a GET, no PUT.
  ASSERT_TRUE(c->scale(Role::kDecode, 4).ok());
  EXPECT_EQ(server_->requests().size(), 5u);
}

TEST_F(KubernetesConnectorTest, RetriesAConflictFromAFreshRead) {
  auto c = connector(options());
  server_->conflictNextPut();
  ASSERT_TRUE(c->scale(Role::kPrefill, 3).ok());
  EXPECT_EQ(server_->replicas("tandem-prefill"), 3);
  std::vector<std::pair<std::string, int>> calls;
  for (const auto& r : server_->requests()) calls.emplace_back(r.method, r.answered);
  EXPECT_EQ(calls, (std::vector<std::pair<std::string, int>>{{"GET", 200}, {"PUT", 409}, {"GET", 200}, {"PUT", 200}}));
}

TEST_F(KubernetesConnectorTest, AWrongTokenIsUnauthenticated) {
  auto c = connector(options("not-the-token"));
  absl::Status status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsUnauthenticated(status)) << status;
  EXPECT_NE(status.message().find("401"), std::string::npos) << status;
  EXPECT_NE(status.message().find("inference/tandem-decode"), std::string::npos) << status;
  EXPECT_EQ(server_->replicas("tandem-decode"), 2);
}

TEST_F(KubernetesConnectorTest, AForbiddenCallNamesTheMissingRbacRule) {
  auto c = connector(options());
  server_->failNext(403);
  absl::Status status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_NE(status.message().find("get deployments/scale of inference/tandem-decode"), std::string::npos) << status;
  EXPECT_NE(status.message().find("verbs [\"get\", \"update\"]"), std::string::npos) << status;
  // a forbidden PUT (get allowed, update not) names the update verb.
  server_->failNextPut(403);
  status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_NE(status.message().find("update deployments/scale of inference/tandem-decode"), std::string::npos)
      << status;
  EXPECT_EQ(server_->replicas("tandem-decode"), 2);
}

TEST_F(KubernetesConnectorTest, AMissingDeploymentIsNotFoundNamingIt) {
  KubernetesConnectorOptions o = options();
  o.decode_deployment = "no-such-deployment";
  auto c = connector(o);
  absl::Status status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_NE(status.message().find("no deployment 'no-such-deployment' in namespace 'inference'"), std::string::npos)
      << status;
  EXPECT_TRUE(absl::IsNotFound(c->current().status()));
}

TEST_F(KubernetesConnectorTest, AnUnreachableServerIsBackedOffThenRetried) {
  auto c = connector(options());
  server_->stop();
  absl::Status status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("backing off"), std::string::npos) << status;
  // within the backoff: no call is made, whatever the server does now.
  server_->start();
  status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("next try in"), std::string::npos) << status;
  EXPECT_TRUE(server_->requests().empty());
  // once it passed, the call goes through (and the backoff starts over).
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (!(status = c->scale(Role::kDecode, 3)).ok() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(server_->replicas("tandem-decode"), 3);
}

TEST_F(KubernetesConnectorTest, AServerCertificateOfAnotherCaIsRefused) {
  KubernetesConnectorOptions o = options();
  o.api.tls.ca_pem = readFile(*dir_ + "/other_ca.pem");
  auto c = connector(o);
  absl::Status status = c->scale(Role::kDecode, 3);
  ASSERT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("TLS handshake"), std::string::npos) << status;
  EXPECT_EQ(server_->replicas("tandem-decode"), 2);
}

TEST(KubeConfigTest, ReadsAKubeconfigsCurrentContext) {
  const std::string dir = tandem::testing::makeTempDir();
  std::ofstream(dir + "/ca.pem") << "CA PEM\n";
  std::ofstream(dir + "/config") << R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: ca.pem
contexts:
- name: prod
  context: {cluster: c1, user: planner, namespace: inference}
users:
- name: planner
  user:
    token: abc123
)";
  absl::StatusOr<KubeApiConfig> config = kubeconfigFile(dir + "/config");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->tls.ca_pem, "CA PEM\n");
  EXPECT_EQ(config->namespace_, "inference");
  EXPECT_EQ(*config->bearerToken(), "abc123");
  EXPECT_TRUE(absl::IsInvalidArgument(kubeconfigFile(dir + "/config", "staging").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(kubeconfigFile(dir + "/missing").status()));
  std::system(("rm -rf " + dir).c_str());
}

TEST(KubeConfigTest, ReadsTheInClusterServiceAccount) {
  const std::string dir = tandem::testing::makeTempDir();
  std::ofstream(dir + "/token") << "sa-token\n";
  std::ofstream(dir + "/ca.crt") << "CLUSTER CA\n";
  std::ofstream(dir + "/namespace") << "inference";
  absl::StatusOr<KubeApiConfig> config = inClusterConfig(dir, "10.96.0.1", "443");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->namespace_, "inference");
  EXPECT_EQ(*config->bearerToken(), "sa-token");
  // the token is read again on each call (the kubelet rotates it).
  std::ofstream(dir + "/token") << "rotated\n";
  EXPECT_EQ(*config->bearerToken(), "rotated");
  std::system(("rm -rf " + dir + "/token").c_str());
  EXPECT_TRUE(absl::IsFailedPrecondition(inClusterConfig(dir, "10.96.0.1", "443").status()));
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace tandem::planner
