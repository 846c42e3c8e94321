// `tandem planner profile --model PATH --out FILE`: measures this machine's
// worker (cli/worker_profiler.h) and writes the profile the `sla` policy and
// the simulator plan with (planner/profile.h), named with the model, the
// backend and the CPU it was measured on.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/engine_flags.h"
#include "cli/worker_profiler.h"

namespace tandem::cli {
namespace {

struct ProfileArgs {
  std::string model;
  std::string out;
  ProfileSweep sweep;
  EngineFlags engine;
};

// the CPU's model name, as lscpu shows it ("model name" of /proc/cpuinfo).
std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

absl::Status runProfile(const ProfileArgs& args) {
  const std::string model = args.model.empty() ? defaultModelPath() : args.model;
  absl::StatusOr<engine::EngineAssemblyOptions> options = engineOptions(args.engine);
  if (!options.ok()) return options.status();
  // fresh prompts every time: nothing may come from the prefix cache.
  options->enable_prefix_caching = false;
  int max_batch = 1;
  for (int b : args.sweep.batches) max_batch = std::max(max_batch, b);
  options->max_num_seqs = std::max(options->max_num_seqs, max_batch);
  std::fprintf(stderr, "loading %s\n", model.c_str());
  absl::StatusOr<engine::EngineAssemblyPtr> assembly = engine::EngineAssembly::create(model, *options);
  if (!assembly.ok()) return assembly.status();
  const unsigned threads = options->num_threads > 0 ? options->num_threads : std::thread::hardware_concurrency();
  std::fprintf(stderr, "measuring on the cpu backend, %u threads, %d KV blocks\n", threads, (*assembly)->numBlocks());
  absl::StatusOr<planner::WorkerProfile> profile = measureWorkerProfile(
      **assembly, args.sweep, [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); });
  if (!profile.ok()) return profile.status();
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  profile->metadata["model"] = std::filesystem::path(model).filename().string();
  profile->metadata["hardware"] = cpuModelName();
  profile->metadata["backend"] = absl::StrCat("cpu, ", threads, " threads");
  profile->metadata["derived"] = false;
  profile->metadata["source"] =
      absl::StrCat("measured with `tandem planner profile` on ", date, " (", args.sweep.repeats,
                   " repeats, median; decode: ", args.sweep.decode_steps, " steps timed per point)");
  if (absl::Status s = profile->save(args.out); !s.ok()) return s;
  std::fprintf(stderr, "wrote %s\n", args.out.c_str());
  return absl::OkStatus();
}

}  // namespace

void registerPlannerProfileCommand(CLI::App* planner) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = planner->add_subcommand(
      "profile", "measure this machine's prefill throughput and decode ITL for the sla policy (JSON)");
  cmd->add_option("--model", args->model, "model path (HF directory or .gguf); default: the embedded model");
  cmd->add_option("--out", args->out, "write the profile here (JSON)")->required();
  cmd->add_option("--prompt-lengths", args->sweep.prompt_lengths,
                  "prefill lengths to measure (comma-separated; default: powers of two to half the context)")
      ->delimiter(',');
  cmd->add_option("--batches", args->sweep.batches, "decode batch sizes (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--contexts", args->sweep.contexts,
                  "decode contexts (comma-separated; default: 1/16, 1/4, 1/2 of the context)")
      ->delimiter(',');
  cmd->add_option("--decode-steps", args->sweep.decode_steps, "decode steps timed per point")
      ->capture_default_str();
  cmd->add_option("--repeats", args->sweep.repeats, "repeats per point (the median is kept)")
      ->capture_default_str();
  addEngineFlags(cmd, &args->engine);
  setAction(cmd, [args] { return runProfile(*args); });
}

}  // namespace tandem::cli
