#include "bench/loadgen/progress.h"

#include <unistd.h>

#include <algorithm>
#include <string>

namespace tandem::bench {

ProgressReporter::ProgressReporter(std::string label, std::optional<uint64_t> total,
                                   std::optional<double> duration_s, FILE* out, std::optional<bool> force_tty)
    : label_(std::move(label)), total_(total), duration_s_(duration_s), out_(out) {
  tty_ = force_tty ? *force_tty : isatty(fileno(out_)) != 0;
}

void ProgressReporter::update(const ProgressState& state) {
  double every = tty_ ? 0.1 : 5.0;
  if (state.elapsed_s - last_draw_s_ < every) return;
  draw(state, false);
}

void ProgressReporter::finish(const ProgressState& state) { draw(state, true); }

void ProgressReporter::draw(const ProgressState& state, bool final) {
  last_draw_s_ = state.elapsed_s;
  // the fraction done: by requests when their number is known, else by time.
  std::optional<double> frac;
  if (total_ && *total_ > 0) {
    frac = static_cast<double>(state.finished + state.failed) / static_cast<double>(*total_);
  } else if (duration_s_ && *duration_s_ > 0) {
    frac = state.elapsed_s / *duration_s_;
  }
  if (frac) frac = std::clamp(*frac, 0.0, 1.0);
  double tok_s = state.elapsed_s > 0 ? state.output_tokens / state.elapsed_s : 0;
  char stats[160];
  std::snprintf(stats, sizeof(stats), "%llu done, %llu failed, %llu in flight, %.1f tok/s, %.1fs",
                static_cast<unsigned long long>(state.finished), static_cast<unsigned long long>(state.failed),
                static_cast<unsigned long long>(state.in_flight), tok_s, state.elapsed_s);
  if (tty_) {
    std::string bar;
    if (frac) {
      constexpr int kWidth = 30;
      int filled = static_cast<int>(*frac * kWidth);
      bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
      char pct[16];
      std::snprintf(pct, sizeof(pct), "%3.0f%% ", *frac * 100);
      bar += pct;
    }
    // \33[K clears what a longer previous line left behind.
    std::fprintf(out_, "\r%s %s%s\33[K%s", label_.c_str(), bar.c_str(), stats, final ? "\n" : "");
  } else {
    char pct[24] = "";
    if (frac) std::snprintf(pct, sizeof(pct), "%.0f%%, ", *frac * 100);
    std::fprintf(out_, "%s: %s%s%s\n", label_.c_str(), pct, stats, final ? " (finished)" : "");
  }
  std::fflush(out_);
}

}  // namespace tandem::bench
