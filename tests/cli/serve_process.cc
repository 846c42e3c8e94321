#include "tests/cli/serve_process.h"

#include <poll.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/test_paths.h"

namespace tandem::testing {

// the pid of the child of `parent` whose command line holds `word`.
pid_t childWith(pid_t parent, const std::string& word) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
    // A process that exited since the listing has no stat left to read.
    const size_t comm_end = line.rfind(')');
    if (comm_end == std::string::npos) continue;
    std::istringstream rest(line.substr(comm_end + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    for (char& c : args) c = c == '\0' ? ' ' : c;
    if (args.find(word) != std::string::npos) return static_cast<pid_t>(std::stoi(name));
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<ServeProcess>> ServeProcess::start(
    const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {tandemBinary(), "serve",       "--host", "127.0.0.1",
                                   "--http-port",  "0",           "--grpc-port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<process::ChildProcessPtr> child = process::ChildProcess::spawn({.argv = argv});
  if (!child.ok()) return child.status();
  std::unique_ptr<ServeProcess> serve(new ServeProcess(std::move(*child)));
  const std::regex ready(R"(tandem serve: model .* on https?://[^:]+:(\d+) .*grpc [^:]+:(-?\d+))");
  std::smatch m;
  const bool up = serve->waitForLine(
      [&](const std::string& line) {
        if (!std::regex_search(line, m, ready)) return false;
        serve->http_port_ = std::stoi(m[1]);
        serve->grpc_port_ = std::stoi(m[2]);
        return true;
      },
      timeout);
  if (!up) {
    return absl::UnavailableError(
        absl::StrCat("tandem serve did not come up:\n", absl::StrJoin(serve->lines(), "\n")));
  }
  return serve;
}

ServeProcess::~ServeProcess() {
  if (!child_->exited()) stop(SIGTERM, std::chrono::seconds(30));
}

void ServeProcess::readPending() {
  for (std::string& line : child_->readLines()) lines_.push_back(std::move(line));
}

const std::vector<std::string>& ServeProcess::lines() {
  readPending();
  return lines_;
}

bool ServeProcess::waitForLine(const std::function<bool(const std::string&)>& match,
                               std::chrono::milliseconds timeout, size_t from) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t seen = from;
  while (true) {
    readPending();
    for (; seen < lines_.size(); ++seen) {
      if (match(lines_[seen])) return true;
    }
    if (child_->outputFd() < 0 || std::chrono::steady_clock::now() >= deadline) return false;
    pollfd fd{child_->outputFd(), POLLIN, 0};
    ::poll(&fd, 1, 100);
  }
}

std::optional<http::testing::RawResponse> ServeProcess::post(const std::string& path,
                                                             const std::string& json) {
  auto client = http::testing::RawClient::connect(http_port_);
  if (client == nullptr) return std::nullopt;
  const std::string request =
      absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n",
                   "Content-Length: ", json.size(), "\r\nConnection: close\r\n\r\n", json);
  if (!client->send(request)) return std::nullopt;
  return client->readResponse(std::chrono::seconds(60));
}

std::optional<http::testing::RawResponse> ServeProcess::get(const std::string& path) {
  auto client = http::testing::RawClient::connect(http_port_);
  if (client == nullptr) return std::nullopt;
  if (!client->send(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"))) {
    return std::nullopt;
  }
  return client->readResponse(std::chrono::seconds(60));
}

std::optional<process::ExitStatus> ServeProcess::stop(int sig, std::chrono::milliseconds timeout) {
  child_->signal(sig);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!child_->reap()) {
    readPending();
    if (std::chrono::steady_clock::now() >= deadline) {
      child_->signal(SIGKILL);
      while (!child_->reap()) ::poll(nullptr, 0, 10);
      return std::nullopt;
    }
    ::poll(nullptr, 0, 20);
  }
  readPending();
  return child_->exitStatus();
}

}  // namespace tandem::testing
