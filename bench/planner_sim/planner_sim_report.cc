// PlannerSimResult's JSON and SVG (planner_simulator.h).
#include <algorithm>

#include "absl/strings/str_format.h"
#include "bench/planner_sim/planner_simulator.h"

namespace tandem::bench {
namespace {

const char* const kColors[] = {"#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#c53030", "#718096"};

// one polyline of (x, y) in a panel whose value range is [0, y_max].
std::string polyline(const std::vector<std::pair<double, double>>& points, double x_max, double y_min, double y_max,
                     int left, int top, int width, int height, const char* color, const char* dash) {
  std::string s = absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", color,
                                  dash[0] ? absl::StrFormat(" stroke-dasharray=\"%s\"", dash) : "");
  for (const auto& [x, y] : points) {
    const double px = left + x / std::max(1e-9, x_max) * width;
    const double py = top + height - (std::clamp(y, y_min, y_max) - y_min) / std::max(1e-9, y_max - y_min) * height;
    absl::StrAppendFormat(&s, "%.1f,%.1f ", px, py);
  }
  s += "\"/>\n";
  return s;
}

}  // namespace

nlohmann::json PlannerSimResult::toJson() const {
  nlohmann::json j;
  j["trace"] = trace;
  j["requests"] = requests;
  j["duration_s"] = duration_s;
  j["options"] = {{"interval_s", options.interval_s},       {"cold_start_s", options.cold_start_s},
                  {"ttft_slo_ms", options.ttft_slo_ms},     {"itl_slo_ms", options.itl_slo_ms},
                  {"predictor", options.predictor},         {"block_size", options.block_size},
                  {"burst_quantile", options.burst_quantile}, {"burst_window_s", options.burst_window_s}};
  j["static_counts"] = {{"prefill", static_counts.prefill}, {"decode", static_counts.decode}};
  j["static_model_counts"] = {{"prefill", static_model_counts.prefill}, {"decode", static_model_counts.decode}};
  j["foresight_headroom"] = {{"prefill", foresight_headroom_prefill}, {"decode", foresight_headroom_decode}};
  nlohmann::json policies_json = nlohmann::json::object();
  for (const PlannerPolicyResult& p : policies) {
    nlohmann::json t = {{"time_s", nlohmann::json::array()},         {"offered_rate", nlohmann::json::array()},
                        {"prefill", nlohmann::json::array()},        {"decode", nlohmann::json::array()},
                        {"ttft_attainment", nlohmann::json::array()}, {"itl_attainment", nlohmann::json::array()}};
    for (const IntervalPoint& pt : p.timeline) {
      t["time_s"].push_back(pt.time_s);
      t["offered_rate"].push_back(pt.offered_rate);
      t["prefill"].push_back(pt.prefill);
      t["decode"].push_back(pt.decode);
      t["ttft_attainment"].push_back(pt.ttft_attainment);
      t["itl_attainment"].push_back(pt.itl_attainment);
    }
    policies_json[p.policy] = {{"ttft_attainment", p.ttft_attainment}, {"itl_attainment", p.itl_attainment},
                               {"gpu_hours", p.gpu_hours},             {"scale_events", p.scale_events},
                               {"max_workers", p.max_workers},         {"max_prefill", p.max_prefill},
                               {"max_decode", p.max_decode},           {"slo_misses", p.slo_misses},
                               {"finished", p.finished},
                               {"ttft_p99_ms", p.ttft_p99_ms},         {"itl_p99_ms", p.itl_p99_ms},
                               {"sim_wall_s", p.sim_wall_s},           {"timeline", std::move(t)}};
    nlohmann::json buckets = nlohmann::json::array();
    for (const MissBucket& b : p.by_prompt) {
      buckets.push_back({{"max_prompt_tokens", b.max_prompt_tokens}, {"requests", b.requests},
                         {"ttft_misses", b.ttft_misses}, {"ttft_misses_service", b.ttft_misses_service},
                         {"ttft_misses_local", b.ttft_misses_local},
                         {"itl_misses", b.itl_misses}});
    }
    policies_json[p.policy]["misses_by_prompt"] = std::move(buckets);
    policies_json[p.policy]["fraction_of_possible_savings"] =
        p.fraction_of_possible_savings ? nlohmann::json(*p.fraction_of_possible_savings) : nlohmann::json(nullptr);
  }
  j["policies"] = std::move(policies_json);
  return j;
}

std::string PlannerSimResult::toSvg() const {
  const int left = 60, width = 760, panel = 150, gap = 40, top0 = 40;
  const int total_height = top0 + 3 * (panel + gap) + 20;
  double x_max = 1, rate_max = 1, workers_max = 1;
  for (const PlannerPolicyResult& p : policies) {
    for (const IntervalPoint& pt : p.timeline) {
      x_max = std::max(x_max, pt.time_s);
      rate_max = std::max(rate_max, pt.offered_rate);
      workers_max = std::max<double>(workers_max, std::max(pt.prefill, pt.decode));
    }
  }
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"18\" font-size=\"13\">%s: TTFT SLO %.0f ms, ITL SLO %.0f ms, cold start %.0f s, "
      "interval %.0f s</text>\n",
      left + width + 170, total_height, trace, options.ttft_slo_ms, options.itl_slo_ms, options.cold_start_s,
      options.interval_s);
  const char* titles[3] = {"offered load (requests/s)", "workers (solid: decode, dashed: prefill)",
                           "SLO attainment per interval (solid: ITL, dashed: TTFT; line at 0.99)"};
  const double y_max[3] = {rate_max * 1.05, workers_max * 1.1, 1};
  const double y_min[3] = {0, 0, 0.8};
  for (int k = 0; k < 3; ++k) {
    const int top = top0 + k * (panel + gap);
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n"
                          "<text x=\"%d\" y=\"%d\">%s</text>\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.4g</text>\n"
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.4g</text>\n",
                          left, top, width, panel, left, top - 6, titles[k], left - 4, top + 10, y_max[k], left - 4,
                          top + panel, y_min[k]);
  }
  const int top_rate = top0, top_workers = top0 + panel + gap, top_att = top0 + 2 * (panel + gap);
  // the 0.99 line.
  const double y99 = top_att + panel - (0.99 - 0.8) / 0.2 * panel;
  absl::StrAppendFormat(&svg, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#aaa\" stroke-dasharray=\"2,3\"/>\n",
                        left, y99, left + width, y99);
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f s</text>\n", left + width,
                        top_att + panel + 14, x_max);
  if (!policies.empty()) {
    std::vector<std::pair<double, double>> rate;
    for (const IntervalPoint& pt : policies.front().timeline) rate.emplace_back(pt.time_s, pt.offered_rate);
    svg += polyline(rate, x_max, 0, y_max[0], left, top_rate, width, panel, "#333", "");
  }
  for (size_t i = 0; i < policies.size(); ++i) {
    const PlannerPolicyResult& p = policies[i];
    const char* color = kColors[i % 6];
    std::vector<std::pair<double, double>> pre, dec, ttft, itl;
    for (const IntervalPoint& pt : p.timeline) {
      pre.emplace_back(pt.time_s, pt.prefill);
      dec.emplace_back(pt.time_s, pt.decode);
      ttft.emplace_back(pt.time_s, pt.ttft_attainment);
      itl.emplace_back(pt.time_s, pt.itl_attainment);
    }
    svg += polyline(dec, x_max, 0, y_max[1], left, top_workers, width, panel, color, "");
    svg += polyline(pre, x_max, 0, y_max[1], left, top_workers, width, panel, color, "5,3");
    svg += polyline(itl, x_max, 0.8, 1, left, top_att, width, panel, color, "");
    svg += polyline(ttft, x_max, 0.8, 1, left, top_att, width, panel, color, "5,3");
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
                          "<text x=\"%d\" y=\"%d\">%s: TTFT %.2f%%, ITL %.2f%%, %.1f GPU-h</text>\n",
                          left + width + 10, top_workers + static_cast<int>(i) * 36, color, left + width + 26,
                          top_workers + static_cast<int>(i) * 36 + 10, p.policy, p.ttft_attainment * 100,
                          p.itl_attainment * 100, p.gpu_hours);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tandem::bench
