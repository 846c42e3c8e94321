#include "bench/planner_sim/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/planner_sim/trace_formats.h"

namespace tandem::bench {
namespace {

// the request-rate multiple of `rate` at time t.
using Shape = std::function<double(double)>;

// ON/OFF periods drawn up front: the multiple at t is their level.
Shape onOff(const SyntheticTraceOptions& o, std::mt19937_64& rng) {
  std::exponential_distribution<double> on(1 / o.on_s), off(1 / o.off_s);
  std::vector<std::pair<double, double>> level;  // (start, multiple)
  bool is_on = false;
  for (double t = 0; t < o.duration_s; is_on = !is_on) {
    level.emplace_back(t, is_on ? o.peak : o.low);
    t += is_on ? on(rng) : off(rng);
  }
  return [level](double t) {
    auto it = std::upper_bound(level.begin(), level.end(), t,
                               [](double x, const std::pair<double, double>& p) { return x < p.first; });
    return std::prev(it)->second;
  };
}

Shape flashCrowd(const SyntheticTraceOptions& o, std::mt19937_64& rng) {
  std::vector<double> starts;
  std::uniform_real_distribution<double> first(0, o.every_s);
  std::exponential_distribution<double> gap(1 / o.every_s);
  for (double t = first(rng); t < o.duration_s; t += o.ramp_s + o.hold_s + 60 + gap(rng)) starts.push_back(t);
  return [starts, o](double t) {
    double m = 1;
    for (double s : starts) {
      const double x = t - s;
      double extra = 0;
      if (x < 0) continue;
      if (x < o.ramp_s) {
        extra = x / o.ramp_s;
      } else if (x < o.ramp_s + o.hold_s) {
        extra = 1;
      } else if (x < o.ramp_s + o.hold_s + 60) {
        extra = 1 - (x - o.ramp_s - o.hold_s) / 60;
      }
      m = std::max(m, 1 + extra * (o.peak - 1));
    }
    return m;
  };
}

std::vector<double> poissonArrivals(const SyntheticTraceOptions& o, const Shape& shape, double max_multiple,
                                    std::mt19937_64& rng) {
  std::vector<double> out;
  const double top = o.rate * max_multiple;
  std::exponential_distribution<double> gap(top);
  std::uniform_real_distribution<double> u(0, 1);
  for (double t = gap(rng); t < o.duration_s; t += gap(rng)) {
    if (u(rng) * top <= o.rate * shape(t)) out.push_back(t);
  }
  return out;
}

std::vector<double> gammaArrivals(const SyntheticTraceOptions& o, std::mt19937_64& rng) {
  // mean gap 1 / rate, scv = 1 / shape.
  const double shape = 1 / o.scv;
  std::gamma_distribution<double> gap(shape, 1 / (o.rate * shape));
  std::vector<double> out;
  for (double t = gap(rng); t < o.duration_s; t += gap(rng)) out.push_back(t);
  return out;
}

int64_t lognormalTokens(double median, double sigma, double cap, std::mt19937_64& rng) {
  std::lognormal_distribution<double> d(std::log(median), sigma);
  return std::clamp<int64_t>(std::llround(d(rng)), 1, static_cast<int64_t>(cap));
}

}  // namespace

absl::StatusOr<SyntheticTraceOptions> parseSyntheticSpec(const std::string& spec) {
  SyntheticTraceOptions o;
  const size_t colon = spec.find(':');
  o.kind = spec.substr(0, colon);
  if (o.kind != "on-off" && o.kind != "flash-crowd" && o.kind != "diurnal" && o.kind != "gamma") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown synthetic trace '", o.kind, "' (on-off, flash-crowd, diurnal, gamma)"));
  }
  if (colon == std::string::npos) return o;
  const std::pair<const char*, double*> fields[] = {
      {"rate", &o.rate},     {"duration_s", &o.duration_s}, {"peak", &o.peak},
      {"low", &o.low},       {"on_s", &o.on_s},             {"off_s", &o.off_s},
      {"ramp_s", &o.ramp_s}, {"hold_s", &o.hold_s},         {"every_s", &o.every_s},
      {"period_s", &o.period_s}, {"depth", &o.depth},       {"scv", &o.scv},
      {"prompt_median", &o.prompt_median}, {"prompt_sigma", &o.prompt_sigma}, {"prompt_max", &o.prompt_max},
      {"output_median", &o.output_median}, {"output_sigma", &o.output_sigma}, {"output_max", &o.output_max}};
  for (absl::string_view item : absl::StrSplit(spec.substr(colon + 1), ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    double* field = nullptr;
    for (const auto& [name, ptr] : fields) {
      if (kv[0] == name) field = ptr;
    }
    double value = 0;
    if (field == nullptr || kv.size() != 2 || !absl::SimpleAtod(kv[1], &value)) {
      return absl::InvalidArgumentError(absl::StrCat("synthetic:", o.kind, ": cannot read '", item,
                                                     "' (key=value: rate, duration_s, peak, low, on_s, off_s, ramp_s, "
                                                     "hold_s, every_s, period_s, depth, scv, prompt_*, output_*)"));
    }
    *field = value;
  }
  // bounded: a stranger's spec cannot ask for an unbounded trace.
  const bool sane = o.rate > 0 && o.duration_s > 0 && o.rate * o.duration_s * std::max({1.0, o.peak}) <= 5e7 &&
                    o.peak > 0 && o.low >= 0 && o.on_s > 0 && o.off_s > 0 && o.ramp_s > 0 && o.hold_s >= 0 &&
                    o.every_s > 0 && o.period_s > 0 && o.depth >= 0 && o.depth <= 1 && o.scv > 0 &&
                    o.prompt_median >= 1 && o.prompt_max >= 1 && o.prompt_max <= (1 << 24) && o.output_median >= 1 &&
                    o.output_max >= 1 && o.output_max <= (1 << 24) && o.prompt_sigma >= 0 && o.output_sigma >= 0;
  if (!sane) {
    return absl::InvalidArgumentError(absl::StrCat("synthetic:", o.kind, ": a parameter is out of range "
                                                   "(positive rates and times, depth in [0, 1], at most 5e7 requests)"));
  }
  return o;
}

absl::StatusOr<SimTrace> syntheticTrace(const SyntheticTraceOptions& o, int block_size) {
  if (block_size <= 0) return absl::InvalidArgumentError("the block size must be positive");
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + 0x5EED);
  std::vector<double> arrivals;
  if (o.kind == "on-off") {
    arrivals = poissonArrivals(o, onOff(o, rng), std::max(o.peak, o.low), rng);
  } else if (o.kind == "flash-crowd") {
    arrivals = poissonArrivals(o, flashCrowd(o, rng), std::max(1.0, o.peak), rng);
  } else if (o.kind == "diurnal") {
    const Shape day = [o](double t) { return 1 + o.depth * std::sin(2 * std::numbers::pi * t / o.period_s); };
    arrivals = poissonArrivals(o, day, 1 + o.depth, rng);
  } else if (o.kind == "gamma") {
    arrivals = gammaArrivals(o, rng);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown synthetic trace '", o.kind, "'"));
  }
  SimTrace trace;
  trace.name = absl::StrCat("synthetic:", o.kind, " (seed ", o.seed, ")");
  const double t0 = arrivals.empty() ? 0 : arrivals.front();
  uint64_t id = 0;
  for (double t : arrivals) {
    SimRequest r;
    r.arrival_s = t - t0;
    r.prompt_tokens = lognormalTokens(o.prompt_median, o.prompt_sigma, o.prompt_max, rng);
    r.output_tokens = lognormalTokens(o.output_median, o.output_sigma, o.output_max, rng);
    r.hashes = uniquePromptBlocks((uint64_t{1} << 40) + id++, r.prompt_tokens, block_size);
    trace.distinct_blocks += static_cast<int64_t>(r.hashes.size());
    trace.requests.push_back(std::move(r));
  }
  return trace;
}

}  // namespace tandem::bench
