#include "planner/profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tandem::planner {
namespace {

// where x falls on the increasing `axis`: index i of the segment [i, i+1]
// and the weight of i+1 (may be < 0 or > 1 outside the axis when
// `extrapolate`, clamped to [0, 1] otherwise).
std::pair<size_t, double> locate(const std::vector<double>& axis, double x, bool extrapolate) {
  if (axis.size() == 1) return {0, 0};
  size_t i = 0;
  while (i + 2 < axis.size() && x > axis[i + 1]) ++i;
  double w = (x - axis[i]) / (axis[i + 1] - axis[i]);
  if (w < 0) w = 0;
  if (!extrapolate) w = std::min(w, 1.0);
  return {i, w};
}

absl::Status invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("profile: ", what));
}

}  // namespace

absl::StatusOr<WorkerProfile> WorkerProfile::create(std::vector<PrefillPoint> prefill,
                                                    std::vector<DecodePoint> decode,
                                                    double kv_capacity_tokens, int max_batch) {
  if (prefill.empty()) return invalid("no prefill points");
  if (decode.empty()) return invalid("no decode points");
  if (!(kv_capacity_tokens > 0)) return invalid("kv_capacity_tokens must be positive");
  if (max_batch <= 0) return invalid("max_batch must be positive");
  for (size_t i = 0; i < prefill.size(); ++i) {
    if (!(prefill[i].prompt_tokens > 0) || !(prefill[i].tokens_per_s > 0)) {
      return invalid("prefill points need positive prompt_tokens and tokens_per_s");
    }
    if (i > 0 && !(prefill[i].prompt_tokens > prefill[i - 1].prompt_tokens)) {
      return invalid("prefill prompt_tokens must increase strictly");
    }
  }
  WorkerProfile p;
  for (const DecodePoint& d : decode) {
    if (!(d.batch > 0) || !(d.context_tokens > 0) || !(d.itl_ms > 0)) {
      return invalid("decode points need positive batch, context_tokens and itl_ms");
    }
    p.batches_.push_back(d.batch);
    p.contexts_.push_back(d.context_tokens);
  }
  for (std::vector<double>* axis : {&p.batches_, &p.contexts_}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  const size_t nb = p.batches_.size(), nc = p.contexts_.size();
  if (decode.size() != nb * nc) {
    return invalid(absl::StrCat("decode points must form a grid: ", nb, " batches x ", nc,
                                " contexts != ", decode.size(), " points"));
  }
  std::sort(decode.begin(), decode.end(), [](const DecodePoint& a, const DecodePoint& b) {
    return a.batch != b.batch ? a.batch < b.batch : a.context_tokens < b.context_tokens;
  });
  p.itl_.resize(nb * nc);
  for (size_t i = 0; i < decode.size(); ++i) {
    if (decode[i].batch != p.batches_[i / nc] || decode[i].context_tokens != p.contexts_[i % nc]) {
      return invalid("decode points must form a grid (a batch x context pair is missing or repeated)");
    }
    p.itl_[i] = decode[i].itl_ms;
  }
  p.min_itl_ = *std::min_element(p.itl_.begin(), p.itl_.end());
  p.prefill_ = std::move(prefill);
  p.decode_ = std::move(decode);
  p.kv_capacity_tokens_ = kv_capacity_tokens;
  p.max_batch_ = max_batch;
  return p;
}

absl::StatusOr<WorkerProfile> WorkerProfile::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) return invalid("not a JSON object");
  auto number = [](const nlohmann::json& j, const char* key) -> absl::StatusOr<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return invalid(absl::StrCat("'", key, "' must be a number"));
    return it->get<double>();
  };
  std::vector<PrefillPoint> prefill;
  std::vector<DecodePoint> decode;
  if (!json.contains("prefill") || !json["prefill"].is_array()) return invalid("'prefill' must be an array");
  if (!json.contains("decode") || !json["decode"].is_array()) return invalid("'decode' must be an array");
  for (const nlohmann::json& j : json["prefill"]) {
    if (!j.is_object()) return invalid("a prefill point is not an object");
    absl::StatusOr<double> len = number(j, "prompt_tokens"), rate = number(j, "tokens_per_s");
    if (!len.ok()) return len.status();
    if (!rate.ok()) return rate.status();
    prefill.push_back({*len, *rate});
  }
  for (const nlohmann::json& j : json["decode"]) {
    if (!j.is_object()) return invalid("a decode point is not an object");
    absl::StatusOr<double> b = number(j, "batch"), c = number(j, "context_tokens"), itl = number(j, "itl_ms");
    if (!b.ok()) return b.status();
    if (!c.ok()) return c.status();
    if (!itl.ok()) return itl.status();
    decode.push_back({*b, *c, *itl});
  }
  absl::StatusOr<double> kv = number(json, "kv_capacity_tokens"), max_batch = number(json, "max_batch");
  if (!kv.ok()) return kv.status();
  if (!max_batch.ok()) return max_batch.status();
  if (*max_batch < 1 || *max_batch > 1e6) return invalid("max_batch must be in 1..1000000");
  absl::StatusOr<WorkerProfile> p =
      create(std::move(prefill), std::move(decode), *kv, static_cast<int>(*max_batch));
  if (!p.ok()) return p.status();
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() != "prefill" && it.key() != "decode" && it.key() != "kv_capacity_tokens" &&
        it.key() != "max_batch") {
      p->metadata[it.key()] = it.value();
    }
  }
  return p;
}

absl::StatusOr<WorkerProfile> WorkerProfile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open the profile ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  absl::StatusOr<WorkerProfile> p = fromJson(json);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", p.status().message()));
  return p;
}

nlohmann::json WorkerProfile::toJson() const {
  nlohmann::json j = metadata;
  j["kv_capacity_tokens"] = kv_capacity_tokens_;
  j["max_batch"] = max_batch_;
  nlohmann::json prefill = nlohmann::json::array(), decode = nlohmann::json::array();
  for (const PrefillPoint& p : prefill_) {
    prefill.push_back({{"prompt_tokens", p.prompt_tokens}, {"tokens_per_s", p.tokens_per_s}});
  }
  for (const DecodePoint& d : decode_) {
    decode.push_back({{"batch", d.batch}, {"context_tokens", d.context_tokens}, {"itl_ms", d.itl_ms}});
  }
  j["prefill"] = std::move(prefill);
  j["decode"] = std::move(decode);
  return j;
}

absl::Status WorkerProfile::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << toJson().dump(2) << "\n";
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

double WorkerProfile::prefillTokensPerS(double prompt_tokens) const {
  if (prefill_.size() == 1 || prompt_tokens <= prefill_.front().prompt_tokens) return prefill_.front().tokens_per_s;
  if (prompt_tokens >= prefill_.back().prompt_tokens) return prefill_.back().tokens_per_s;
  size_t i = 0;
  while (prompt_tokens > prefill_[i + 1].prompt_tokens) ++i;
  const double w = (std::log(prompt_tokens) - std::log(prefill_[i].prompt_tokens)) /
                   (std::log(prefill_[i + 1].prompt_tokens) - std::log(prefill_[i].prompt_tokens));
  return prefill_[i].tokens_per_s + w * (prefill_[i + 1].tokens_per_s - prefill_[i].tokens_per_s);
}

double WorkerProfile::prefillSeconds(double new_tokens, double prompt_tokens) const {
  return std::max(0.0, new_tokens) / prefillTokensPerS(std::max(prompt_tokens, new_tokens));
}

double WorkerProfile::decodeItlMs(double batch, double context_tokens) const {
  const size_t nc = contexts_.size();
  auto [bi, bw] = locate(batches_, batch, /*extrapolate=*/true);
  auto [ci, cw] = locate(contexts_, context_tokens, /*extrapolate=*/true);
  auto at = [&](size_t b, size_t c) { return itl_[b * nc + c]; };
  const size_t b1 = std::min(bi + 1, batches_.size() - 1), c1 = std::min(ci + 1, nc - 1);
  const double lo = at(bi, ci) + cw * (at(bi, c1) - at(bi, ci));
  const double hi = at(b1, ci) + cw * (at(b1, c1) - at(b1, ci));
  return std::max(min_itl_, lo + bw * (hi - lo));
}

int WorkerProfile::maxBatchForItl(double itl_ms, double context_tokens) const {
  const int kv_limit = static_cast<int>(kv_capacity_tokens_ / std::max(1.0, context_tokens));
  const int top = std::min(max_batch_, kv_limit);
  // ITL grows with the batch: binary search the last batch within it.
  int lo = 0, hi = top;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (decodeItlMs(mid, context_tokens) <= itl_ms) lo = mid; else hi = mid - 1;
  }
  return lo;
}

}  // namespace tandem::planner
