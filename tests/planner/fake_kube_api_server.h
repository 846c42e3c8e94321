// A real HTTPS server (Boost.Beast over OpenSSL, a test CA) that speaks the
// Kubernetes API's Deployment scale subresource, for the kubernetes
// connector's tests: GET/PUT /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale
// with a bearer token, resourceVersion conflicts (409), and scripted
// 401/403/404 answers. One request a connection (the connector's client
// sends Connection: close).
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::planner::testing {

struct SeenRequest {
  std::string method;
  std::string target;
  std::string authorization;
  std::string body;
  int answered = 0;
};

class FakeKubeApiServer {
 public:
  // `cert_pem`/`key_pem`: the server's certificate and key.
  FakeKubeApiServer(std::string cert_pem, std::string key_pem, std::string token, std::string ns);
  ~FakeKubeApiServer();

  // listens on 127.0.0.1 (port 0 the first time, then the same port again).
  void start();
  // stops listening and serving (connections are refused afterwards).
  void stop();
  int port() const { return port_; }

  // a Deployment with `replicas` (its Scale's resourceVersion starts at 1).
  void addDeployment(const std::string& name, int replicas);
  int replicas(const std::string& name);
  // the next request answers `status` (with a Status body) whatever it asks.
  void failNext(int status);
  // the next PUT answers `status` (with a Status body).
  void failNextPut(int status);
  // the next PUT finds the Scale changed by another writer: 409, and the
  // resourceVersion moves on.
  void conflictNextPut();

  std::vector<SeenRequest> requests();

 private:
  struct Deployment {
    int replicas = 0;
    int version = 1;
  };
  void serve();
  // the answer (status, body) to one request; mu_ held.
  std::pair<int, std::string> answerLocked(const SeenRequest& request);

  const std::string cert_pem_, key_pem_, token_, ns_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  struct Io;
  std::unique_ptr<Io> io_;  // while started
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, Deployment> deployments_;  // guarded by mu_
  std::deque<int> fail_next_;                      // guarded by mu_
  bool conflict_next_put_ = false;                 // guarded by mu_
  int fail_next_put_ = 0;                          // guarded by mu_
  std::vector<SeenRequest> requests_;              // guarded by mu_
};

}  // namespace tandem::planner::testing
