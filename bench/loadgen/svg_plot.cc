#include "bench/loadgen/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::bench {

namespace {

// colour-blind-safe (Okabe-Ito).
const char* const kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"};
const char* color(size_t i) { return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))]; }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmtTick(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a >= 10000) return absl::StrFormat("%.0fk", v / 1000);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 1) return absl::StrFormat("%g", std::round(v * 10) / 10);
  return absl::StrFormat("%g", std::round(v * 1000) / 1000);
}

struct Series {
  std::string label;
  const char* color;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  bool markers = false;
};

// one framed chart: axes with ticks and grid, lines, a legend.
struct Panel {
  double x, y, w, h;  // the plot area in picture coordinates
  double xmin, xmax, ymin, ymax;
  std::string title, xlabel, ylabel;

  double px(double v) const { return x + (v - xmin) / (xmax - xmin) * w; }
  double py(double v) const { return y + h - (v - ymin) / (ymax - ymin) * h; }

  void draw(std::string* svg, const std::vector<Series>& series, const std::vector<std::string>& notes) const {
    absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='title'>%s</text>\n", x, y - 12, escape(title));
    for (double t : niceTicks(xmin, xmax, 6)) {
      if (t < xmin - 1e-9 || t > xmax + 1e-9) continue;
      absl::StrAppendFormat(svg, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>\n", px(t), y, px(t), y + h);
      absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%s</text>\n", px(t),
                            y + h + 14, fmtTick(t));
    }
    for (double t : niceTicks(ymin, ymax, 5)) {
      if (t < ymin - 1e-9 || t > ymax + 1e-9) continue;
      absl::StrAppendFormat(svg, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>\n", x, py(t), x + w, py(t));
      absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='tick' text-anchor='end'>%s</text>\n", x - 4,
                            py(t) + 4, fmtTick(t));
    }
    absl::StrAppendFormat(svg, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='frame'/>\n", x, y, w, h);
    absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='label' text-anchor='middle'>%s</text>\n", x + w / 2,
                          y + h + 32, escape(xlabel));
    absl::StrAppendFormat(svg,
                          "<text x='%.1f' y='%.1f' class='label' text-anchor='middle' "
                          "transform='rotate(-90 %.1f %.1f)'>%s</text>\n",
                          x - 40, y + h / 2, x - 40, y + h / 2, escape(ylabel));
    absl::StrAppendFormat(svg, "<clipPath id='c%d'><rect x='%.1f' y='%.1f' width='%.1f' height='%.1f'/></clipPath>\n",
                          static_cast<int>(x * 7 + y), x, y, w, h);
    for (const Series& s : series) {
      if (s.points.empty()) continue;
      std::string pts;
      for (const auto& [vx, vy] : s.points) absl::StrAppendFormat(&pts, "%.1f,%.1f ", px(vx), py(vy));
      absl::StrAppendFormat(svg,
                            "<polyline clip-path='url(#c%d)' points='%s' fill='none' stroke='%s' "
                            "stroke-width='2'%s/>\n",
                            static_cast<int>(x * 7 + y), pts, s.color, s.dashed ? " stroke-dasharray='6 4'" : "");
      if (s.markers) {
        for (const auto& [vx, vy] : s.points) {
          absl::StrAppendFormat(svg, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s'/>\n", px(vx), py(vy), s.color);
        }
      }
    }
    // legend and notes, top-left inside the frame.
    double ly = y + 16;
    for (const Series& s : series) {
      if (s.label.empty()) continue;
      absl::StrAppendFormat(svg, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='3'%s/>\n",
                            x + 8, ly - 4, x + 28, ly - 4, s.color, s.dashed ? " stroke-dasharray='6 4'" : "");
      absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='legend'>%s</text>\n", x + 32, ly, escape(s.label));
      ly += 15;
    }
    for (const std::string& n : notes) {
      absl::StrAppendFormat(svg, "<text x='%.1f' y='%.1f' class='note' text-anchor='end'>%s</text>\n", x + w - 6,
                            y + h - 8 - 14 * (&n - &notes[0]) , escape(n));
    }
  }
};

std::vector<std::pair<double, double>> cdf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> pts;
  if (v.empty()) return pts;
  size_t n = v.size();
  size_t step = std::max<size_t>(1, n / 400);
  pts.emplace_back(v.front(), 0.0);
  for (size_t i = 0; i < n; i += step) pts.emplace_back(v[i], static_cast<double>(i + 1) / n);
  pts.emplace_back(v.back(), 1.0);
  return pts;
}

using Extract = std::function<std::vector<double>(const RunResult&)>;

}  // namespace

std::vector<double> niceTicks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || count < 1) return {lo};
  double raw = (hi - lo) / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // integer multiples, so rounding errors do not accumulate.
  for (int64_t k = static_cast<int64_t>(std::ceil(lo / step - 1e-9)); k * step <= hi + step * 1e-9; ++k) {
    ticks.push_back(static_cast<double>(k) * step);
  }
  return ticks;
}

namespace {

constexpr double kPlotWidth = 1040, kPanelW = 400, kPanelH = 240;

// the svg element, its styles and the title.
std::string svgHeader(const std::string& title, double height) {
  return absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' viewBox='0 0 %.0f %.0f' "
      "font-family='Helvetica, Arial, sans-serif'>\n"
      "<style>.title{font-size:14px;font-weight:bold}.tick{font-size:11px;fill:#444}.label{font-size:12px}"
      ".legend{font-size:11px}.note{font-size:11px;fill:#333}.grid{stroke:#e4e4e4}"
      ".frame{fill:none;stroke:#888}</style>\n"
      "<rect width='100%%' height='100%%' fill='white'/>\n"
      "<text x='20' y='28' font-size='18' font-weight='bold'>%s</text>\n",
      kPlotWidth, height, kPlotWidth, height, escape(title));
}

// four CDF panels (TTFT, ITL, TPOT, end to end), every run a series; one
// run also gets its p50 and p99 marked.
void drawLatencyPanels(const std::vector<RunResult>& runs, std::string* out) {
  std::string& svg = *out;
  struct Metric { const char* name; Extract values; std::function<Distribution(const Summary&)> dist; };
  std::vector<Metric> metrics = {
      {"time to first token", [](const RunResult& r) { std::vector<double> v; for (auto& x : r.records) if (x.ok) v.push_back(x.ttft_ms); return v; },
       [](const Summary& s) { return s.ttft_ms; }},
      {"inter-token latency", [](const RunResult& r) { std::vector<double> v; for (auto& x : r.records) if (x.ok) v.insert(v.end(), x.itl_ms.begin(), x.itl_ms.end()); return v; },
       [](const Summary& s) { return s.itl_ms; }},
      {"time per output token", [](const RunResult& r) { std::vector<double> v; for (auto& x : r.records) if (x.ok && x.tpot_ms) v.push_back(*x.tpot_ms); return v; },
       [](const Summary& s) { return s.tpot_ms; }},
      {"end-to-end latency", [](const RunResult& r) { std::vector<double> v; for (auto& x : r.records) if (x.ok) v.push_back(x.e2e_ms); return v; },
       [](const Summary& s) { return s.e2e_ms; }},
  };
  for (size_t m = 0; m < metrics.size(); ++m) {
    Panel p;
    p.x = 80 + (m % 2) * (kPanelW + 110);
    p.y = 80 + (m / 2) * (kPanelH + 90);
    p.w = kPanelW;
    p.h = kPanelH;
    // the axis ends a little past the largest p99, so a long tail does not
    // squash the body of the distribution (the max is in the note).
    double xmax = 0, max_all = 0;
    for (const RunResult& r : runs) {
      Distribution d = metrics[m].dist(r.summary);
      xmax = std::max(xmax, d.p99);
      max_all = std::max(max_all, d.max);
    }
    if (xmax <= 0) xmax = 1;
    xmax *= 1.15;
    p.xmin = 0, p.xmax = xmax, p.ymin = 0, p.ymax = 1;
    p.title = absl::StrCat(metrics[m].name, " (CDF)");
    p.xlabel = max_all > xmax ? absl::StrFormat("ms (axis cut at 1.15 x p99; max %.1f)", max_all) : "ms";
    p.ylabel = "fraction of samples";
    std::vector<Series> series;
    std::vector<std::string> notes;
    for (size_t i = 0; i < runs.size(); ++i) {
      series.push_back({runs[i].label, color(i), cdf(metrics[m].values(runs[i]))});
    }
    if (runs.size() == 1) {
      Distribution d = metrics[m].dist(runs[0].summary);
      for (auto [q, v] : {std::pair<const char*, double>{"p50", d.p50}, {"p99", d.p99}}) {
        series.push_back({"", "#999999", {{v, 0}, {v, 1}}, true});
        notes.push_back(absl::StrFormat("%s %.1f ms", q, v));
      }
      notes.push_back(absl::StrFormat("mean %.1f ms", d.mean));
    }
    p.draw(&svg, series, notes);
  }

}

// a sweep's throughput and latency against the offered rate.
void drawSweepPanels(const std::vector<RunResult>& runs, std::string* out) {
  std::string& svg = *out;
  double rmax = 0, tmax = 0, lmax = 0;
  for (const RunResult& r : runs) {
    rmax = std::max(rmax, *r.rate);
    tmax = std::max({tmax, r.summary.request_throughput, *r.rate});
    lmax = std::max({lmax, r.summary.ttft_ms.p99, r.summary.tpot_ms.p50 * 10});
  }
  Panel a{80, 80 + 2 * (kPanelH + 90), kPanelW, kPanelH, 0, rmax * 1.05, 0, tmax * 1.1 + 1e-9,
          "throughput vs offered rate", "offered rate (req/s)", "req/s"};
  Series ideal{"offered", "#999999", {{0, 0}, {rmax * 1.05, rmax * 1.05}}, true};
  Series thr{"achieved", color(0), {}, false, true};
  Series good{"goodput (SLO)", color(2), {}, false, true};
  for (const RunResult& r : runs) {
    thr.points.emplace_back(*r.rate, r.summary.request_throughput);
    if (r.summary.goodput) good.points.emplace_back(*r.rate, *r.summary.goodput);
  }
  a.draw(&svg, {ideal, thr, good}, {});
  Panel b{80 + kPanelW + 110, 80 + 2 * (kPanelH + 90), kPanelW, kPanelH, 0, rmax * 1.05, 0, lmax * 1.1 + 1e-9,
          "latency vs offered rate", "offered rate (req/s)", "ms"};
  Series p50{"TTFT p50", color(0), {}, false, true};
  Series p99{"TTFT p99", color(1), {}, false, true};
  Series tpot{"TPOT p50 x 10", color(2), {}, true, true};
  for (const RunResult& r : runs) {
    p50.points.emplace_back(*r.rate, r.summary.ttft_ms.p50);
    p99.points.emplace_back(*r.rate, r.summary.ttft_ms.p99);
    tpot.points.emplace_back(*r.rate, r.summary.tpot_ms.p50 * 10);
  }
  b.draw(&svg, {p50, p99, tpot}, {});
}

}  // namespace

std::string renderPlot(const std::vector<RunResult>& runs, const std::string& title) {
  const bool sweep = runs.size() > 1 && std::all_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.rate.has_value(); });
  std::string svg = svgHeader(title, sweep ? 1080 : 760);
  drawLatencyPanels(runs, &svg);
  if (sweep) drawSweepPanels(runs, &svg);
  svg += "</svg>\n";
  return svg;
}

}  // namespace tandem::bench
