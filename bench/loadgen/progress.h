// Progress of a running benchmark on stderr: a live bar redrawn in place
// when stderr is a terminal, else one plain line every few seconds (logs
// and CI capture stay readable).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace tandem::bench {

struct ProgressState {
  uint64_t finished = 0;
  uint64_t failed = 0;
  uint64_t in_flight = 0;
  uint64_t output_tokens = 0;
  double elapsed_s = 0;
};

class ProgressReporter {
 public:
  // `total` requests or `duration_s` seconds bound the run (either may be
  // unknown). `out` defaults to stderr; `force_tty` overrides detection.
  ProgressReporter(std::string label, std::optional<uint64_t> total, std::optional<double> duration_s,
                   FILE* out = stderr, std::optional<bool> force_tty = std::nullopt);

  // cheap to call often: draws at most every 100 ms (tty) or 5 s (not).
  void update(const ProgressState& state);
  // the final state, and a newline on a tty.
  void finish(const ProgressState& state);

 private:
  void draw(const ProgressState& state, bool final);

  std::string label_;
  std::optional<uint64_t> total_;
  std::optional<double> duration_s_;
  FILE* out_;
  bool tty_;
  double last_draw_s_ = -1e9;
};

}  // namespace tandem::bench
