// The container files of deploy/docker, checked statically (no container
// runtime can pull base images here; they were not built): every COPY
// source exists, stages are referenced by name, the build runs the
// repository's own scripts, the binary lands where the manifests run it,
// the user is the manifests' non-root one, and the CPU image installs the
// package of every shared library the tested binary links.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/deploy/manifests.h"
#include "tests/test_paths.h"

namespace tandem::deploy_testing {
namespace {

struct Instruction {
  std::string op;    // FROM, COPY, RUN, ...
  std::string args;  // the rest, continuation lines joined
};

std::vector<Instruction> readDockerfile(const std::string& name) {
  std::ifstream in(tandem::testing::sourceDir() + "/deploy/docker/" + name);
  EXPECT_TRUE(in) << name;
  std::vector<Instruction> out;
  std::string line, joined;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    std::istringstream words(joined);
    Instruction i;
    words >> i.op;
    std::getline(words, i.args);
    i.args = std::regex_replace(i.args, std::regex("^\\s+|\\s+$"), "");
    out.push_back(i);
    joined.clear();
  }
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class DockerfileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DockerfileTest, CopiesExistingFilesAndBuildsWithTheRepositoryScripts) {
  const std::vector<Instruction> file = readDockerfile(GetParam());
  ASSERT_FALSE(file.empty());
  std::set<std::string> stages;
  int froms = 0;
  bool built = false, binary = false, model = false;
  std::string user;
  for (const Instruction& i : file) {
    const std::vector<std::string> w = words(i.args);
    if (i.op == "FROM") {
      ++froms;
      if (w.size() == 3 && w[1] == "AS") stages.insert(w[2]);
    } else if (i.op == "COPY") {
      ASSERT_GE(w.size(), 2u) << i.args;
      if (w[0].rfind("--from=", 0) == 0) {
        EXPECT_TRUE(stages.count(w[0].substr(7))) << "COPY " << i.args << ": no stage of that name before it";
        if (w[1] == "/build/tandem") {
          EXPECT_EQ(w[2], kImageBinary) << "the manifests run " << kImageBinary;
          binary = true;
        }
        continue;
      }
      for (size_t k = 0; k + 1 < w.size(); ++k) {
        EXPECT_TRUE(std::filesystem::exists(tandem::testing::sourceDir() + "/" + w[k])) << "COPY source " << w[k] << " is not in the repository";
      }
      if (w[0] == "models/stories260K") {
        // the binary looks for models/stories260K/gguf/stories260K.gguf
        // beside its own directory's parent (cli/default_model.cc).
        EXPECT_EQ(w[1], "/opt/tandem/models/stories260K");
        model = true;
      }
    } else if (i.op == "RUN" && i.args.find("scripts/build.sh") != std::string::npos) {
      // scripts/build.sh BUILD_DIR --target tandem [cmake args], as the README builds.
      EXPECT_EQ(i.args.rfind("bash /src/scripts/build.sh /build --target tandem", 0), 0u) << i.args;
      built = true;
    } else if (i.op == "RUN" && i.args.find("install-deps.sh") != std::string::npos) {
      EXPECT_EQ(i.args, "bash /src/scripts/install-deps.sh");
    } else if (i.op == "USER") {
      user = i.args;
    }
  }
  EXPECT_GE(froms, 2) << "multi-stage";
  EXPECT_TRUE(built && binary && model);
  EXPECT_EQ(user, "10001:10001") << "the manifests' runAsUser";
  EXPECT_TRUE(std::filesystem::exists(tandem::testing::sourceDir() + "/scripts/build.sh"));
}

TEST(DockerfileRocm, BuildsTheHipBackendForMi300AndMi350InAmdsImage) {
  std::string build_args;
  std::string first_from;
  for (const Instruction& i : readDockerfile("Dockerfile.rocm")) {
    if (i.op == "FROM" && first_from.empty()) first_from = i.args;
    if (i.op == "RUN" && i.args.find("scripts/build.sh") != std::string::npos) build_args = i.args;
  }
  EXPECT_EQ(first_from.rfind("rocm/dev-", 0), 0u) << first_from;
  EXPECT_NE(build_args.find("-DTANDEM_HIP=ON"), std::string::npos);
  EXPECT_NE(build_args.find("\"-DTANDEM_HIP_ARCHS=gfx942;gfx950\""), std::string::npos);
}

// every shared library build/tandem links (ldd) belongs to a Debian package
// the CPU image's runtime stage installs (or to debian:12-slim itself).
TEST(DockerfileCpu, RuntimeStageInstallsEveryLibraryTheBinaryLinks) {
  std::string install;
  for (const Instruction& i : readDockerfile("Dockerfile.cpu")) {
    if (i.op == "RUN" && i.args.find("apt-get install") != std::string::npos) install = i.args;
  }
  const std::vector<std::string> listed = words(install);
  const std::set<std::string> in_image(listed.begin(), listed.end());
  const std::set<std::string> in_base = {"libc6", "libgcc-s1", "libstdc++6"};
  CommandOutput ldd = runCommand({"ldd", tandem::testing::tandemBinary()});
  ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
  // one dpkg -S for them all (each call reads the whole package database);
  // both the path ldd names and the file it resolves to.
  static const std::regex kLib("=> (/\\S+)");
  std::vector<std::string> argv = {"dpkg", "-S"};
  int libs = 0;
  for (std::sregex_iterator it(ldd.output.begin(), ldd.output.end(), kLib), end; it != end; ++it) {
    argv.push_back((*it)[1].str());
    argv.push_back(std::filesystem::canonical((*it)[1].str()).string());
    ++libs;
  }
  CommandOutput owners = runCommand(argv);
  std::map<std::string, std::string> package_of;  // file -> package
  static const std::regex kOwner("^([^:\\s]+)(:\\S+)?: (/\\S+)$");
  std::istringstream lines(owners.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kOwner)) package_of[m[3].str()] = m[1].str();
  }
  for (size_t k = 2; k < argv.size(); k += 2) {
    std::string package = package_of.count(argv[k]) ? package_of[argv[k]] : package_of[argv[k + 1]];
    ASSERT_FALSE(package.empty()) << argv[k] << " belongs to no Debian package:\n" << owners.output;
    EXPECT_TRUE(in_image.count(package) || in_base.count(package)) << argv[k] << " comes with " << package << ", which Dockerfile.cpu does not install";
  }
  EXPECT_GT(libs, 5);
}

TEST(Dockerignore, KeepsBuildTreesAndGitOutOfTheContext) {
  std::ifstream in(tandem::testing::sourceDir() + "/.dockerignore");
  ASSERT_TRUE(in);
  std::set<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_TRUE(lines.count(".git"));
  EXPECT_TRUE(lines.count("build*/"));
}

INSTANTIATE_TEST_SUITE_P(Images, DockerfileTest, ::testing::Values("Dockerfile.cpu", "Dockerfile.rocm"),
                         [](const auto& info) { return info.param.substr(info.param.find('.') + 1); });

}  // namespace
}  // namespace tandem::deploy_testing
