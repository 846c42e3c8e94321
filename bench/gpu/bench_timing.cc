#include "bench/gpu/bench_timing.h"

#include <algorithm>
#include <chrono>

#include "common/status.h"

namespace tandem::bench::gpu {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

absl::StatusOr<Timing> timeOps(kernels::hip::HipBackend& backend, int repeats, int iters,
                               const std::function<absl::Status(int)>& op) {
  for (int i = 0; i < std::min(iters, 2); ++i) {
    if (absl::Status s = op(i); !s.ok()) return s;
  }
  if (absl::Status s = backend.checkedSynchronize(); !s.ok()) return s;
  absl::Status inside = absl::OkStatus();
  auto graph = backend.captureOps([&] {
    for (int i = 0; i < iters && inside.ok(); ++i) inside = op(i);
  });
  if (!inside.ok()) return inside;
  Timing t;
  t.graph = graph.ok();
  auto once = [&]() -> absl::Status {
    if (t.graph) return (*graph)->replay();
    for (int i = 0; i < iters; ++i) RETURN_IF_ERROR(op(i));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(once());  // the graph's first launch uploads it
  RETURN_IF_ERROR(backend.checkedSynchronize());
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(once());
    RETURN_IF_ERROR(backend.checkedSynchronize());
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    t.samples_s.push_back(d.count() / iters);
  }
  t.median_s = median(t.samples_s);
  return t;
}

nlohmann::json entry(const std::string& name, const Timing& t, double value,
                     const std::string& unit) {
  return {{"name", name},
          {"median_s", t.median_s},
          {"samples_s", t.samples_s},
          {"timing", t.graph ? "graph" : "loop"},
          {"value", value},
          {"unit", unit}};
}

int rotatingCopies(size_t bytes) {
  constexpr size_t kTarget = size_t{512} << 20;
  const size_t copies = (kTarget + bytes - 1) / std::max<size_t>(bytes, 1);
  return static_cast<int>(std::clamp<size_t>(copies, 1, 32));
}

}  // namespace tandem::bench::gpu
