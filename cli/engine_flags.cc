#include "cli/engine_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

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
  ASSIGN_OR_RETURN(opts->kv_budget_bytes, parseByteSize("--kv-budget", text, false));
  return absl::OkStatus();
}

absl::Status parseTierFlags(const EngineFlags& flags, engine::KvTierOptions* tiers) {
  ASSIGN_OR_RETURN(tiers->host_bytes, parseByteSize("--kv-host-bytes", flags.kv_host_bytes, true));
  if (tiers->disk_path.empty()) {
    if (!flags.kv_disk_bytes.empty()) {
      return absl::InvalidArgumentError("--kv-disk-bytes needs --kv-disk-path");
    }
    return absl::OkStatus();
  }
  if (flags.kv_disk_bytes.empty()) {
    return absl::InvalidArgumentError("--kv-disk-path needs --kv-disk-bytes (e.g. 8G)");
  }
  ASSIGN_OR_RETURN(tiers->disk_bytes, parseByteSize("--kv-disk-bytes", flags.kv_disk_bytes, false));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint64_t> parseByteSize(std::string_view flag, const std::string& text,
                                       bool allow_zero) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), ": cannot read '", text, "' (", std::string(why), ")"));
  };
  if (text.empty()) return bad("give a size like 512M");
  uint64_t mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K': case 'k': mult = 1ull << 10; digits.pop_back(); break;
    case 'M': case 'm': mult = 1ull << 20; digits.pop_back(); break;
    case 'G': case 'g': mult = 1ull << 30; digits.pop_back(); break;
    default: break;
  }
  uint64_t n;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(digits, &n)) {
    return bad("a size is digits with an optional K, M or G suffix, like 512M");
  }
  if (n == 0 && !allow_zero) return bad("must be positive");
  if (n > UINT64_MAX / mult) return bad("too large");
  return n * mult;
}

void addEngineFlags(CLI::App* cmd, EngineFlags* flags) {
  engine::EngineAssemblyOptions& o = flags->options;
  cmd->add_option("--backend", flags->backend,
                  "compute backend: cpu, or hip (GPU; AMD with -DTANDEM_HIP, NVIDIA with "
                  "-DTANDEM_CUDA builds)")
      ->capture_default_str();
  cmd->add_option("--device", o.device, "the GPU of --backend hip (0-based)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--threads", o.num_threads, "compute threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-budget", flags->kv_budget, "KV cache: bytes (256M, 2G) or a fraction of free memory (0.2) (default: "
                  "room for --max-num-seqs full contexts, at most 10% of free memory)");
  cmd->add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd->add_option("--kv-cache-dtype", flags->kv_cache_dtype,
                  "KV cache elements: f32, or f16 (half the memory a token; auto = f32). Prefill "
                  "and decode workers that move blocks must use the same")
      ->check(CLI::IsMember({"auto", "f32", "f16"}))
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", o.max_num_seqs, "most sequences in one batch")->capture_default_str();
  cmd->add_option("--max-batched-tokens", o.max_num_batched_tokens, "most tokens in one step")->capture_default_str();
  cmd->add_option("--chunk-size", o.chunk_size, "prefill chunk size")->capture_default_str();
  cmd->add_option("--max-model-len", o.max_model_len, "0 = the model's context")->capture_default_str();
  cmd->add_flag("--no-prefix-cache", flags->no_prefix_cache, "disable prefix caching");
  cmd->add_flag("--enforce-eager", o.enforce_eager,
                "launch every op of a decode step from the host (no captured graphs; --backend "
                "hip replays a graph a batch shape by default)");
  engine::KvTierOptions& t = o.tiers;
  cmd->add_option("--kv-host-bytes", flags->kv_host_bytes,
                  "G2: host memory for KV blocks evicted from the pool (512M, 4G; 0 = off)")
      ->capture_default_str();
  cmd->add_option("--kv-disk-path", t.disk_path,
                  "G3: directory for the KV block file(s) on local NVMe (off when not given)");
  cmd->add_option("--kv-disk-bytes", flags->kv_disk_bytes, "G3 capacity (e.g. 64G; needed with --kv-disk-path)");
  cmd->add_option("--kv-disk-io", t.disk_io, "G3 io: uring or threads")
      ->check(CLI::IsMember({"uring", "threads"}))
      ->capture_default_str();
  cmd->add_option("--kv-disk-queue-depth", t.disk_queue_depth, "G3 reads and writes in flight")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--kv-disk-min-hits", t.disk_min_hits,
                  "G3 admission: a block is written once offered this many times")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

absl::StatusOr<engine::EngineAssemblyOptions> engineOptions(const EngineFlags& flags) {
  engine::EngineAssemblyOptions o = flags.options;
  ASSIGN_OR_RETURN(o.backend, kernels::parseBackendKind(flags.backend));
  absl::Status status = parseKvBudget(flags.kv_budget, &o);
  if (!status.ok()) return status;
  RETURN_IF_ERROR(parseTierFlags(flags, &o.tiers));
  o.enable_prefix_caching = !flags.no_prefix_cache;
  if (flags.kv_cache_dtype == "f16") {
    o.kv_dtype = DType::kF16;
  } else if (flags.kv_cache_dtype == "auto" || flags.kv_cache_dtype == "f32") {
    o.kv_dtype = DType::kF32;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-cache-dtype ", flags.kv_cache_dtype, ": use auto, f32 or f16"));
  }
  return o;
}

}  // namespace tandem::cli
