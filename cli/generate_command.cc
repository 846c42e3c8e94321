// `tandem generate`: offline generation through the continuous-batching
// engine, for checks and quick use. Greedy unless --temperature is given.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/engine_flags.h"
#include "cli/path_flags.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "generation/request_limits.h"
#include "nlohmann/json.hpp"
#include "server/engine/engine_assembly.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct GenerateArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  std::string batch_file;
  generation::SamplingParams params;
  float temperature = 0.0f;
  std::optional<uint64_t> seed;
  bool json_output = false;
  EngineFlags engine;
};

struct Job {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  std::string finish_reason;
  int cached_tokens = 0;
  Clock::time_point start, first, end;
};

absl::StatusOr<std::vector<int32_t>> parseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      return absl::InvalidArgumentError(absl::StrCat("--prompt-ids: '", part, "' is not a token id"));
    }
    ids.push_back(id);
  }
  return ids;
}

// the completion's text as it continues the prompt (keeps a leading space
// that decoding the completion alone would drop).
std::string continuationText(const tokenizer::Tokenizer& tok, const Job& job) {
  std::vector<int32_t> all = job.prompt;
  all.insert(all.end(), job.output.begin(), job.output.end());
  std::string full = tok.decode(all, true);
  std::string head = tok.decode(job.prompt, true);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tok.decode(job.output, true);
}

double perSecond(double n, Clock::time_point a, Clock::time_point b) {
  double s = std::chrono::duration<double>(b - a).count();
  return s > 0 ? n / s : 0.0;
}

absl::Status runGenerate(GenerateArgs args) {
  if (args.model.empty()) args.model = defaultModelPath();
  RETURN_IF_ERROR(checkModelFlag("--model", args.model));
  args.params.temperature = args.temperature;
  args.params.seed = args.seed;
  RETURN_IF_ERROR(args.params.validate());
  ASSIGN_OR_RETURN(engine::EngineAssemblyOptions engine_options, engineOptions(args.engine));

  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load(args.model));
  std::vector<Job> jobs;
  if (!args.prompt_ids.empty()) {
    Job job;
    ASSIGN_OR_RETURN(job.prompt, parseIds(args.prompt_ids));
    jobs.push_back(std::move(job));
  } else if (!args.batch_file.empty()) {
    ASSIGN_OR_RETURN(std::string text, readFile(args.batch_file));
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      Job job;
      job.prompt = tok->encode(std::string_view(line.data(), line.size()), true);
      jobs.push_back(std::move(job));
    }
    if (jobs.empty()) return absl::InvalidArgumentError(absl::StrCat(args.batch_file, ": no prompts"));
  } else {
    if (args.prompt.empty()) return absl::InvalidArgumentError("the prompt is empty: give --prompt, --prompt-ids or --batch");
    Job job;
    job.prompt = tok->encode(args.prompt, true);
    jobs.push_back(std::move(job));
  }
  ASSIGN_OR_RETURN(auto local, engine::EngineAssembly::create(args.model, engine_options));
  for (const Job& job : jobs) {
    RETURN_IF_ERROR(generation::checkRequest(local->limits(), job.prompt, args.params));
  }
  engine::Engine& eng = local->engine();
  Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].start = t0;
    RETURN_IF_ERROR(eng.addRequest(i, jobs[i].prompt, args.params));
  }
  while (eng.hasUnfinished()) {
    for (const generation::TokenOutput& out : eng.step()) {
      Job& job = jobs[out.id];
      if (out.finish_reason == generation::FinishReason::kError) {
        return absl::InternalError("the model failed during generation");
      }
      if (job.output.empty()) job.first = Clock::now();
      job.output.push_back(out.token);
      job.cached_tokens = out.num_cached_tokens;
      if (out.finished()) {
        job.end = Clock::now();
        job.finish_reason = std::string(generation::finishReasonName(out.finish_reason));
      }
    }
  }
  Clock::time_point t1 = Clock::now();

  size_t total_out = 0;
  for (const Job& job : jobs) {
    total_out += job.output.size();
    std::string text = continuationText(*tok, job);
    if (args.json_output) {
      json j = {{"prompt_ids", job.prompt},
                {"completion_ids", job.output},
                {"text", text},
                {"finish_reason", job.finish_reason},
                {"cached_tokens", job.cached_tokens},
                {"timings",
                 {{"prefill_tok_s", perSecond(job.prompt.size(), job.start, job.first)},
                  {"decode_tok_s", perSecond(job.output.size() - 1, job.first, job.end)}}}};
      std::printf("%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    } else {
      std::printf("%s%s\n", tok->decode(job.prompt, true).c_str(), text.c_str());
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%zu sequences, %zu tokens generated in %.3f s (%.1f tok/s aggregate)\n",
               jobs.size(), total_out, std::chrono::duration<double>(t1 - t0).count(),
               perSecond(total_out, t0, t1));
  return absl::OkStatus();
}

}  // namespace

void registerGenerateCommand(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->params.max_tokens = 64;
  CLI::App* cmd = app.add_subcommand("generate", "generate text offline with the continuous-batching engine");
  cmd->add_option("--model", args->model, "HF dir or .gguf (default: the embedded stories260K)");
  auto* p = cmd->add_option("--prompt", args->prompt, "prompt text");
  auto* ids = cmd->add_option("--prompt-ids", args->prompt_ids, "prompt token ids: 1,2,3");
  auto* batch = cmd->add_option("--batch", args->batch_file, "file with one prompt per line, run together");
  p->excludes(ids)->excludes(batch);
  ids->excludes(batch);
  cmd->add_option("--max-tokens", args->params.max_tokens, "tokens to generate")->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-p", args->params.top_p)->capture_default_str();
  cmd->add_option("--top-k", args->params.top_k, "-1 = off")->capture_default_str();
  cmd->add_option("--min-p", args->params.min_p)->capture_default_str();
  cmd->add_option("--repetition-penalty", args->params.repetition_penalty)->capture_default_str();
  cmd->add_option("--presence-penalty", args->params.presence_penalty)->capture_default_str();
  cmd->add_option("--frequency-penalty", args->params.frequency_penalty)->capture_default_str();
  cmd->add_option("--seed", args->seed, "per-request seed");
  cmd->add_flag("--ignore-eos", args->params.ignore_eos, "keep generating after EOS");
  cmd->add_flag("--json", args->json_output, "one JSON object per prompt");
  addEngineFlags(cmd, &args->engine);
  setAction(cmd, [args] { return runGenerate(*args); });
}

}  // namespace tandem::cli
