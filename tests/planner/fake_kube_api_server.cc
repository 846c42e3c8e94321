#include "tests/planner/fake_kube_api_server.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "nlohmann/json.hpp"

namespace tandem::planner::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct FakeKubeApiServer::Io {
  asio::io_context io;
  asio::ssl::context tls{asio::ssl::context::tls_server};
  tcp::acceptor acceptor{io};
};

namespace {

std::string statusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason}, {"code", code}}
      .dump();
}

}  // namespace

FakeKubeApiServer::FakeKubeApiServer(std::string cert_pem, std::string key_pem, std::string token, std::string ns)
    : cert_pem_(std::move(cert_pem)), key_pem_(std::move(key_pem)), token_(std::move(token)), ns_(std::move(ns)) {}

FakeKubeApiServer::~FakeKubeApiServer() { stop(); }

void FakeKubeApiServer::start() {
  io_ = std::make_unique<Io>();
  io_->tls.use_certificate_chain(asio::buffer(cert_pem_));
  io_->tls.use_private_key(asio::buffer(key_pem_), asio::ssl::context::pem);
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_));
  io_->acceptor.open(endpoint.protocol());
  io_->acceptor.set_option(asio::socket_base::reuse_address(true));
  io_->acceptor.bind(endpoint);
  io_->acceptor.listen();
  port_ = io_->acceptor.local_endpoint().port();
  stopping_ = false;
  serve();
  thread_ = std::thread([this] { io_->io.run(); });
}

void FakeKubeApiServer::stop() {
  if (io_ == nullptr) return;
  stopping_ = true;
  asio::post(io_->io, [this] {
    boost::system::error_code ec;
    io_->acceptor.close(ec);
    io_->io.stop();
  });
  thread_.join();
  io_.reset();
}

// accepts one connection, answers its request on the I/O thread (blocking:
// a test server), then accepts the next.
void FakeKubeApiServer::serve() {
  io_->acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec || stopping_) return;
    beast::ssl_stream<tcp::socket> stream(std::move(socket), io_->tls);
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) {
      beast::flat_buffer buffer;
      http::request<http::string_body> req;
      http::read(stream, buffer, req, ec);
      if (!ec) {
        SeenRequest seen{std::string(req.method_string()), std::string(req.target()),
                         std::string(req[http::field::authorization]), req.body()};
        std::pair<int, std::string> answer;
        {
          std::lock_guard lock(mu_);
          answer = answerLocked(seen);
          seen.answered = answer.first;
          requests_.push_back(seen);
        }
        http::response<http::string_body> res{static_cast<http::status>(answer.first), 11};
        res.set(http::field::content_type, "application/json");
        res.set(http::field::connection, "close");
        res.body() = answer.second;
        res.prepare_payload();
        http::write(stream, res, ec);
        stream.shutdown(ec);
      }
    }
    serve();
  });
}

std::pair<int, std::string> FakeKubeApiServer::answerLocked(const SeenRequest& request) {
  if (request.authorization != absl::StrCat("Bearer ", token_)) {
    return {401, statusBody(401, "Unauthorized", "Unauthorized")};
  }
  int scripted = 0;
  if (!fail_next_.empty()) {
    scripted = fail_next_.front();
    fail_next_.pop_front();
  } else if (request.method == "PUT" && fail_next_put_ != 0) {
    scripted = std::exchange(fail_next_put_, 0);
  }
  if (scripted != 0) {
    const int status = scripted;
    const char* reason = status == 403 ? "Forbidden" : status == 404 ? "NotFound" : "Unauthorized";
    return {status, statusBody(status, reason, absl::StrCat("scripted ", status))};
  }
  // /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale
  const std::vector<std::string> parts = absl::StrSplit(request.target, '/');
  if (parts.size() != 9 || parts[1] != "apis" || parts[2] != "apps" || parts[3] != "v1" ||
      parts[4] != "namespaces" || parts[6] != "deployments" || parts[8] != "scale") {
    return {404, statusBody(404, "NotFound", "the server could not find the requested resource")};
  }
  auto it = deployments_.find(parts[7]);
  if (parts[5] != ns_ || it == deployments_.end()) {
    return {404, statusBody(404, "NotFound", absl::StrCat("deployments.apps \"", parts[7], "\" not found"))};
  }
  Deployment& d = it->second;
  auto scale = [&] {
    return nlohmann::json{{"kind", "Scale"},
                          {"apiVersion", "autoscaling/v1"},
                          {"metadata", {{"name", parts[7]}, {"namespace", ns_}, {"resourceVersion", std::to_string(d.version)}}},
                          {"spec", {{"replicas", d.replicas}}},
                          {"status", {{"replicas", d.replicas}, {"selector", "app=tandem"}}}}
        .dump();
  };
  if (request.method == "GET") return {200, scale()};
  if (request.method != "PUT") return {405, statusBody(405, "MethodNotAllowed", "only GET and PUT")};
  if (conflict_next_put_) {
    conflict_next_put_ = false;
    ++d.version;
  }
  const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  if (!body.is_object() || !body.contains("spec") || !body["spec"].contains("replicas") || body["kind"] != "Scale") {
    return {400, statusBody(400, "BadRequest", "not a Scale")};
  }
  const std::string version = body["metadata"].value("resourceVersion", "");
  if (version != std::to_string(d.version)) {
    return {409, statusBody(409, "Conflict",
                            "Operation cannot be fulfilled on deployments.apps: the object has been modified; "
                            "please apply your changes to the latest version and try again")};
  }
  d.replicas = body["spec"]["replicas"].get<int>();
  ++d.version;
  return {200, scale()};
}

void FakeKubeApiServer::addDeployment(const std::string& name, int replicas) {
  std::lock_guard lock(mu_);
  deployments_[name] = {replicas, 1};
}

int FakeKubeApiServer::replicas(const std::string& name) {
  std::lock_guard lock(mu_);
  return deployments_[name].replicas;
}

void FakeKubeApiServer::failNext(int status) {
  std::lock_guard lock(mu_);
  fail_next_.push_back(status);
}

void FakeKubeApiServer::failNextPut(int status) {
  std::lock_guard lock(mu_);
  fail_next_put_ = status;
}

void FakeKubeApiServer::conflictNextPut() {
  std::lock_guard lock(mu_);
  conflict_next_put_ = true;
}

std::vector<SeenRequest> FakeKubeApiServer::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

}  // namespace tandem::planner::testing
