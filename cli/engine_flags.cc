#include "cli/engine_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tandem::cli {
namespace {

// "0.25" is a fraction of available memory; "268435456", "256M", "2G" bytes.
absl::Status parseKvBudget(const std::string& text, engine::EngineAssemblyOptions* opts) {
  if (text.empty()) return absl::OkStatus();
  double fraction;
  if (text.find('.') != std::string::npos && absl::SimpleAtod(text, &fraction)) {
    if (!(fraction > 0 && fraction <= 1)) {
      return absl::InvalidArgumentError("--kv-budget fraction must be in (0, 1]");
    }
    opts->kv_fraction = fraction;
    return absl::OkStatus();
  }
  uint64_t mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K': case 'k': mult = 1ull << 10; digits.pop_back(); break;
    case 'M': case 'm': mult = 1ull << 20; digits.pop_back(); break;
    case 'G': case 'g': mult = 1ull << 30; digits.pop_back(); break;
    default: break;
  }
  uint64_t n;
  if (!absl::SimpleAtoi(digits, &n) || n == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--kv-budget: cannot read '", text, "'"));
  }
  opts->kv_budget_bytes = n * mult;
  return absl::OkStatus();
}

}  // namespace

void addEngineFlags(CLI::App* cmd, EngineFlags* flags) {
  engine::EngineAssemblyOptions& o = flags->options;
  cmd->add_option("--threads", o.num_threads, "compute threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-budget", flags->kv_budget, "KV cache: bytes (256M, 2G) or a fraction of free memory (0.2)");
  cmd->add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd->add_option("--max-num-seqs", o.max_num_seqs, "most sequences in one batch")->capture_default_str();
  cmd->add_option("--max-batched-tokens", o.max_num_batched_tokens, "most tokens in one step")->capture_default_str();
  cmd->add_option("--chunk-size", o.chunk_size, "prefill chunk size")->capture_default_str();
  cmd->add_option("--max-model-len", o.max_model_len, "0 = the model's context")->capture_default_str();
  cmd->add_flag("--no-prefix-cache", flags->no_prefix_cache, "disable prefix caching");
}

absl::StatusOr<engine::EngineAssemblyOptions> engineOptions(const EngineFlags& flags) {
  engine::EngineAssemblyOptions o = flags.options;
  absl::Status status = parseKvBudget(flags.kv_budget, &o);
  if (!status.ok()) return status;
  o.enable_prefix_caching = !flags.no_prefix_cache;
  return o;
}

}  // namespace tandem::cli
