#include "tests/deploy/manifests.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "yaml-cpp/yaml.h"

namespace tandem::deploy_testing {
namespace {

json scalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  // quoted scalars ("!" tag) stay strings.
  if (node.Tag() != "?") return s;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kOctal("0o[0-7]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, kInt)) return std::stoll(s);
  if (std::regex_match(s, kOctal)) return std::stoll(s.substr(2), nullptr, 8);
  if (std::regex_match(s, kFloat)) return std::stod(s);
  return s;
}

json toJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalarToJson(node);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const YAML::Node& item : node) out.push_back(toJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = toJson(kv.second);
      return out;
    }
    default:
      return nullptr;
  }
}

}  // namespace

std::string overlayDir(const std::string& name) {
  return tandem::testing::sourceDir() + "/deploy/k8s/overlays/" + name;
}

std::vector<std::string> overlayNames() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(overlayDir(""))) {
    if (std::filesystem::exists(entry.path() / "kustomization.yaml")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<json> parseYamlDocuments(const std::string& text) {
  std::vector<json> out;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    if (!doc.IsNull()) out.push_back(toJson(doc));
  }
  return out;
}

CommandOutput runCommand(const std::vector<std::string>& argv) {
  CommandOutput result;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::freopen("/dev/null", "r", stdin);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    _exit(127);
  }
  close(pipe_fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) result.output.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::vector<json> renderOverlay(const std::string& dir) {
  CommandOutput out = runCommand({"kubectl", "kustomize", dir});
  if (out.exit_code != 0) {
    ADD_FAILURE() << "kubectl kustomize " << dir << " failed (exit " << out.exit_code
                  << "; kubectl with kustomize v5 is needed, see scripts/install-deps.sh):\n"
                  << out.output;
    return {};
  }
  return parseYamlDocuments(out.output);
}

std::vector<json> objectsOfKind(const std::vector<json>& objects, const std::string& kind) {
  std::vector<json> out;
  for (const json& o : objects) {
    if (o.value("kind", "") == kind) out.push_back(o);
  }
  return out;
}

json objectNamed(const std::vector<json>& objects, const std::string& kind, const std::string& name) {
  for (const json& o : objectsOfKind(objects, kind)) {
    if (o["metadata"].value("name", "") == name) return o;
  }
  return nullptr;
}

bool selectorMatches(const json& selector, const json& labels) {
  if (!selector.is_object() || !labels.is_object()) return false;
  if (selector.contains("matchExpressions")) return false;
  const json& pairs = selector.contains("matchLabels") ? selector["matchLabels"] : selector;
  if (pairs.empty()) return false;  // an empty selector selects everything: never meant here
  for (const auto& [key, value] : pairs.items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

std::map<std::string, std::string> containerEnv(const json& container, const std::vector<json>& objects,
                                                const std::map<std::string, std::string>& field_refs) {
  std::map<std::string, std::string> env;
  for (const json& from : container.value("envFrom", json::array())) {
    if (!from.contains("configMapRef")) continue;
    const json cm = objectNamed(objects, "ConfigMap", from["configMapRef"]["name"].get<std::string>());
    if (cm.is_null()) continue;
    const json data = cm.value("data", json::object());
    for (const auto& [key, value] : data.items()) {
      env[key] = value.get<std::string>();
    }
  }
  for (const json& var : container.value("env", json::array())) {
    const std::string name = var["name"].get<std::string>();
    if (var.contains("value")) {
      env[name] = expandVars(var["value"].get<std::string>(), env);
    } else if (var.contains("valueFrom") && var["valueFrom"].contains("fieldRef")) {
      auto it = field_refs.find(var["valueFrom"]["fieldRef"]["fieldPath"].get<std::string>());
      if (it != field_refs.end()) env[name] = it->second;
    }
  }
  return env;
}

std::string expandVars(const std::string& text, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "$$") == 0) {
      out += '$';
      i += 2;
    } else if (text.compare(i, 2, "$(") == 0) {
      const size_t end = text.find(')', i);
      auto it = end == std::string::npos ? env.end() : env.find(text.substr(i + 2, end - i - 2));
      if (it == env.end()) {
        out += text[i++];
      } else {
        out += it->second;
        i = end + 1;
      }
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::vector<std::string> subcommandOf(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (const std::string& a : args) {
    if (a.rfind("-", 0) == 0) break;
    words.push_back(a);
  }
  return words;
}

std::vector<std::string> acceptedFlags(const std::vector<std::string>& subcommand) {
  std::vector<std::string> argv = {tandem::testing::tandemBinary()};
  argv.insert(argv.end(), subcommand.begin(), subcommand.end());
  argv.push_back("--help");
  CommandOutput out = runCommand(argv);
  // CLI11 answers --help of an unknown subcommand with the top-level help:
  // the usage line must name the subcommand.
  std::string usage = "Usage: \\S+";
  for (const std::string& word : subcommand) usage += " " + word;
  if (out.exit_code != 0 || !std::regex_search(out.output, std::regex(usage + "( |\n)"))) return {};
  // CLI11 lists each option at the start of a line: "  --name TYPE ..." or
  // "  -h,--help ..."; flags named inside descriptions do not count.
  std::vector<std::string> flags;
  static const std::regex kOption("^\\s+(-[A-Za-z],)?(--[a-z0-9][a-z0-9-]*)");
  std::istringstream lines(out.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kOption)) flags.push_back(m[2].str());
  }
  return flags;
}

std::string flagName(const std::string& arg) {
  if (arg.rfind("--", 0) != 0) return "";
  return arg.substr(0, arg.find('='));
}

}  // namespace tandem::deploy_testing
