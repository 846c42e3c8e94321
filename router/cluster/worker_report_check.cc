#include "router/cluster/worker_report_check.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "proto/convert/worker_enum_names.h"

namespace tandem::router::cluster {
namespace {

// printable ASCII; `spaces`: ' ' allowed too.
bool printable(std::string_view s, bool spaces) {
  for (char c : s) {
    if (c < (spaces ? 0x20 : 0x21) || c > 0x7e) return false;
  }
  return true;
}

// no control characters (UTF-8 beyond ASCII allowed: paths may hold it).
bool noControl(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

absl::Status bad(std::string_view field, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("worker ", absl::string_view(field.data(), field.size()), " ",
                   absl::string_view(why.data(), why.size())));
}

absl::Status checkText(std::string_view field, const std::string& value, size_t max) {
  if (value.size() > max) return bad(field, absl::StrCat("is longer than ", max, " bytes"));
  if (!noControl(value)) return bad(field, "holds control characters");
  return absl::OkStatus();
}

absl::Status checkRange(std::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return bad(field, absl::StrCat("is ", value, ", not in ", lo, "..", hi));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status checkWorkerInfo(const tandem::v1::WorkerInfo& info) {
  const std::string& id = info.worker_id();
  if (id.empty() || id.size() > kMaxWorkerIdBytes || !printable(id, false)) {
    return bad("worker_id", absl::StrCat("must be 1..", kMaxWorkerIdBytes,
                                         " printable characters without spaces"));
  }
  absl::StatusOr<HostPort> address = parseHostPort(info.address());
  if (!address.ok() || address->port < 1 || address->host.size() > kMaxHostBytes ||
      !printable(address->host, false)) {
    return bad("address", "must be HOST:PORT with a port of 1..65535");
  }
  if (!rpc::isKnownWorkerRole(info.role())) {
    return bad("role", "must be prefill, decode or both");
  }
  if (info.model_name().empty() || info.model_name().size() > kMaxModelNameBytes ||
      !printable(info.model_name(), true)) {
    return bad("model_name", absl::StrCat("must be 1..", kMaxModelNameBytes, " printable characters"));
  }
  if (absl::Status s = checkText("model_path", info.model_path(), kMaxPathBytes); !s.ok()) return s;
  if (absl::Status s = checkText("metrics_url", info.metrics_url(), kMaxPathBytes); !s.ok()) return s;
  if (absl::Status s = checkText("kv_endpoint", info.kv_endpoint(), kMaxPathBytes); !s.ok()) return s;
  if (absl::Status s = checkRange("max_model_len", info.max_model_len(), 1, kMaxModelLen); !s.ok()) return s;
  if (absl::Status s = checkRange("vocab_size", info.vocab_size(), 1, kMaxVocabSize); !s.ok()) return s;
  if (absl::Status s = checkRange("block_size", info.block_size(), 1, kMaxBlockSize); !s.ok()) return s;
  return checkRange("num_blocks", info.num_blocks(), 0, kMaxCount);
}

absl::Status checkWorkerStats(const tandem::v1::WorkerStats& stats) {
  if (stats.worker_id().size() > kMaxWorkerIdBytes) {
    return bad("stats worker_id", absl::StrCat("is longer than ", kMaxWorkerIdBytes, " bytes"));
  }
  const std::pair<const char*, int64_t> counts[] = {
      {"num_running", stats.num_running()},
      {"num_waiting", stats.num_waiting()},
      {"num_blocks", stats.num_blocks()},
      {"num_free_blocks", stats.num_free_blocks()},
      {"num_active_blocks", stats.num_active_blocks()},
      {"num_transfers_in_flight", stats.num_transfers_in_flight()},
  };
  for (const auto& [field, value] : counts) {
    if (absl::Status s = checkRange(field, value, 0, kMaxCount); !s.ok()) return s;
  }
  if (absl::Status s = checkRange("num_free_blocks", stats.num_free_blocks(), 0, stats.num_blocks());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = checkRange("num_active_blocks", stats.num_active_blocks(), 0, stats.num_blocks());
      !s.ok()) {
    return s;
  }
  return checkRange("num_prefill_tokens_queued", stats.num_prefill_tokens_queued(), 0,
                    kMaxQueuedTokens);
}

}  // namespace tandem::router::cluster
