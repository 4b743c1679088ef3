#include "reports/charts.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "reports/html.h"
#include "reports/svg.h"

namespace soak::report {

namespace {

constexpr double kWidth = 960;
constexpr double kLeft = 72, kRight = 16;
constexpr double kMsPerHour = 3'600'000.0;

// Time-axis steps, smallest first: a week gets days, an hour gets minutes.
constexpr int64_t kSteps[] = {1'000,     5'000,      15'000,     60'000,     300'000,    900'000,
                              3'600'000, 10'800'000, 21'600'000, 43'200'000, 86'400'000, 172'800'000};

int64_t time_step(int64_t span_ms, int target) {
  for (int64_t s : kSteps)
    if (span_ms / s <= target) return s;
  return kSteps[std::size(kSteps) - 1];
}

void time_axis(Svg& svg, const Scale& x, int64_t from, int64_t to, double y) {
  svg.line(x(static_cast<double>(from)), y, x(static_cast<double>(to)), y, "axis");
  const int64_t span = std::max<int64_t>(1, to - from);
  const int64_t step = time_step(span, 8);
  for (int64_t t = (from / step + 1) * step; t <= to; t += step) {
    const double px = x(static_cast<double>(t));
    svg.line(px, y, px, y + 4, "axis");
    svg.text(px, y + 15, time_label(t, span), "tick", Svg::Anchor::Middle);
  }
}

void value_axis(Svg& svg, const Scale& y, const std::vector<double>& ticks, double x0, double x1,
                std::string_view unit) {
  for (double t : ticks) {
    const double py = y(t);
    svg.line(x0, py, x1, py, "grid");
    svg.text(x0 - 4, py + 4, num(t), "tick", Svg::Anchor::End);
  }
  if (!unit.empty()) svg.text(4, y.r1 - 6, unit, "unit");
}

Scale time_scale(int64_t from, int64_t to) {
  return Scale{static_cast<double>(from), static_cast<double>(std::max(to, from + 1)), kLeft, kWidth - kRight};
}

std::string stage_tooltip(const StageSpan& s) {
  std::string t = std::string(to_string(s.kind)) + " " + std::string(to_string(s.state)) + ": " + iso_utc(s.start_ms) +
                  " to " + iso_utc(s.end_ms) + " (" + duration_text(s.end_ms - s.start_ms) + ")";
  if (!s.reason.empty()) t += " — " + s.reason;
  return t;
}

// A band (min..max per bucket) and its median line; values scaled by `unit`.
void band(Svg& svg, const Scale& x, const Scale& y, const std::vector<Bucket>& b, double unit, std::string_view cls,
          bool with_band) {
  if (b.empty()) return;
  Points mid, area;
  for (const auto& k : b) {
    const double cx = x(static_cast<double>(k.t0_ms + k.t1_ms) / 2);
    mid.push_back({cx, y(k.median / unit)});
    area.push_back({cx, y(k.max / unit)});
  }
  if (with_band) {
    for (auto it = b.rbegin(); it != b.rend(); ++it)
      area.push_back({x(static_cast<double>(it->t0_ms + it->t1_ms) / 2), y(it->min / unit)});
    svg.polygon(area, std::string(cls) + " band");
  }
  svg.polyline(mid, std::string(cls) + " line");
}

void extent(const std::vector<Bucket>& b, double unit, double& lo, double& hi) {
  for (const auto& k : b) {
    lo = std::min(lo, k.min / unit);
    hi = std::max(hi, k.max / unit);
  }
}

void legend(Svg& svg, double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
  for (const auto& [cls, label] : items) {
    svg.rect(x, y - 8, 14, 8, "key " + cls);
    svg.text(x + 18, y, label, "legend");
    x += 26 + 7.0 * static_cast<double>(label.size());
  }
}

void box(Svg& svg, const Scale& x, double cy, double h, const Summary& s, std::string_view cls, std::string_view tip) {
  if (s.n == 0) return;
  svg.line(x(s.p5), cy, x(s.p25), cy, std::string(cls) + " whisker");
  svg.line(x(s.p75), cy, x(s.p95), cy, std::string(cls) + " whisker");
  svg.rect(x(s.p25), cy - h / 2, std::max(1.0, x(s.p75) - x(s.p25)), h, std::string(cls) + " box", tip);
  svg.line(x(s.median), cy - h / 2, x(s.median), cy + h / 2, std::string(cls) + " median");
}

std::string summary_tip(std::string_view who, const Summary& s, std::string_view unit) {
  return std::string(who) + ": n=" + std::to_string(s.n) + ", median " + num(s.median) + " " + std::string(unit) +
         ", p25–p75 " + num(s.p25) + "–" + num(s.p75) + ", p5–p95 " + num(s.p5) + "–" + num(s.p95) + ", min " +
         num(s.min) + ", max " + num(s.max);
}

std::string figure_unit(std::string_view figure) {
  if (figure == "decode_tps" || figure == "prompt_tps") return "tok/s";
  return "ms";
}

}  // namespace

std::string time_label(int64_t ms, int64_t span_ms) {
  time_t t = static_cast<time_t>(ms / 1000);
  tm v{};
  gmtime_r(&t, &v);
  char buf[32];
  if (span_ms > 2 * 86'400'000LL)
    strftime(buf, sizeof buf, "%m-%d %H:%M", &v);
  else if (span_ms > 120'000)
    strftime(buf, sizeof buf, "%H:%M", &v);
  else
    strftime(buf, sizeof buf, "%H:%M:%S", &v);
  return buf;
}

std::string timeline_svg(const Timeline& t, std::string_view id, TimelineSize size) {
  const bool full = size == TimelineSize::Full;
  const double w = full ? kWidth : 300, h = full ? 120 : 30;
  Svg svg(w, h, id, full ? "chart timeline" : "chart timeline mini", "stage timeline");
  const Scale x{static_cast<double>(t.from_ms), static_cast<double>(t.to_ms), full ? kLeft : 2,
                w - (full ? kRight : 2)};
  const double stage_y = full ? 20 : 4, stage_h = full ? 30 : 14, mark_y = full ? 66 : 24;
  if (full) {
    svg.text(4, stage_y + 19, "stages", "lane");
    svg.text(4, mark_y + 4, "events", "lane");
  }
  for (const auto& s : t.stages) {
    const double x0 = x(static_cast<double>(s.start_ms)), x1 = x(static_cast<double>(s.end_ms));
    svg.rect(x0, stage_y, std::max(1.5, x1 - x0), stage_h, "stage state-" + std::string(to_string(s.state)),
             stage_tooltip(s));
    if (full && x1 - x0 > 44) svg.text(x0 + 4, stage_y + 19, to_string(s.kind), "stage-label");
    if (full && s.state == StageState::Running) {
      svg.line(x(static_cast<double>(s.nominal_end_ms)), stage_y - 4, x(static_cast<double>(s.nominal_end_ms)),
               stage_y + stage_h + 4, "nominal-end");
      svg.line(x(static_cast<double>(s.deadline_ms)), stage_y - 4, x(static_cast<double>(s.deadline_ms)),
               stage_y + stage_h + 4, "deadline");
    }
  }
  for (const auto& e : t.events) {
    const std::string kind(to_string(e.kind));
    std::string tip = kind + " at " + iso_utc(e.wall_ms);
    if (e.duration_ms) tip += " (" + duration_text(*e.duration_ms) + ")";
    if (!e.detail_json.empty() && e.detail_json != "{}") tip += ": " + e.detail_json;
    if (full) svg.begin_link("#" + event_anchor(e.id));
    if (e.kind == EventKind::Gap && e.duration_ms) {
      const double x1 = x(static_cast<double>(e.wall_ms)), x0 = x(static_cast<double>(e.wall_ms - *e.duration_ms));
      svg.rect(x0, stage_y, std::max(2.0, x1 - x0), stage_h, "gap", tip);
    } else if (full || e.kind == EventKind::GuardTrip || e.kind == EventKind::ProcessRestart) {
      svg.circle(x(static_cast<double>(e.wall_ms)), mark_y, full ? 5 : 3, "ev ev-" + kind, tip);
    }
    if (full) svg.end_link();
  }
  if (full) {
    time_axis(svg, x, t.from_ms, t.to_ms, 84);
    legend(svg, kLeft, 116,
           {{"ev-gap", "gap"},
            {"ev-process_restart", "restart"},
            {"ev-guard_trip", "guard trip"},
            {"ev-build_change", "build change"},
            {"ev-control", "control"},
            {"ev-other", "other"}});
  }
  return svg.str();
}

std::string memory_svg(const MemoryChart& m) {
  Svg svg(kWidth, 330, "memory", "chart memory", "footprint, resident and swap over the " + m.stage);
  const Scale x = time_scale(m.from_ms, m.to_ms);
  constexpr double kMB = 1e6;
  double lo = INFINITY, hi = -INFINITY;
  extent(m.footprint, kMB, lo, hi);
  extent(m.resident, kMB, lo, hi);
  if (m.trend)
    for (double v : m.trend->block_y_mb) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = 0, hi = 1;
  auto [y0, y1] = nice_range(lo, hi, 5);
  const Scale y{y0, y1, 200, 16};
  value_axis(svg, y, nice_ticks(y0, y1, 5), kLeft, kWidth - kRight, "MB");
  band(svg, x, y, m.footprint, kMB, "footprint", true);
  band(svg, x, y, m.resident, kMB, "resident", false);
  if (m.trend) {
    const TrendView& t = *m.trend;
    auto hours = [&](int64_t ms) { return static_cast<double>(ms - t.t0_ms) / kMsPerHour; };
    std::vector<double> xs = t.block_x_h, ys = t.block_y_mb;
    std::sort(xs.begin(), xs.end());
    std::sort(ys.begin(), ys.end());
    // Sen's interval is an interval of the slope: the fan pivots on the fit's centre.
    const double xm = xs[xs.size() / 2], ym = t.intercept + t.slope * xm;
    auto at = [&](double slope, int64_t ms) { return ym + slope * (hours(ms) - xm); };
    const int64_t a = std::max(m.from_ms, t.t0_ms), b = m.to_ms;
    svg.polygon(
        {{x(static_cast<double>(a)), y(at(t.lo, a))},
         {x(static_cast<double>(b)), y(at(t.lo, b))},
         {x(static_cast<double>(b)), y(at(t.hi, b))},
         {x(static_cast<double>(a)), y(at(t.hi, a))}},
        "trend-interval",
        "Sen's interval of the slope: [" + num(t.lo) + ", " + num(t.hi) + "] MB/h at " + num(t.confidence * 100) + "%");
    svg.polyline({{x(static_cast<double>(a)), y(at(t.slope, a))}, {x(static_cast<double>(b)), y(at(t.slope, b))}},
                 "trend line");
    for (size_t i = 0; i < t.block_x_h.size(); ++i)
      svg.circle(x(static_cast<double>(t.t0_ms) + t.block_x_h[i] * kMsPerHour), y(t.block_y_mb[i]), 1.6, "block");
    svg.text(kLeft + 6, 30,
             "Theil–Sen " + num(t.slope) + " MB/h [" + num(t.lo) + ", " + num(t.hi) + "] MB/h, bound " + num(t.bound) +
                 " MB/h; " + std::to_string(t.block_x_h.size()) + " block medians of " + std::to_string(t.samples) +
                 " " + t.source + " samples",
             "trend-label");
  }
  // Swap panel.
  double slo = 0, shi = 1;
  extent(m.swap, kMB, slo, shi);
  extent(m.host_swap, kMB, slo, shi);
  auto [s0, s1] = nice_range(0, shi, 2);
  const Scale ys{s0, s1, 272, 222};
  value_axis(svg, ys, nice_ticks(s0, s1, 2), kLeft, kWidth - kRight, "swap MB");
  band(svg, x, ys, m.host_swap, kMB, "host-swap", true);
  band(svg, x, ys, m.swap, kMB, "swap", true);
  time_axis(svg, x, m.from_ms, m.to_ms, 280);
  legend(svg, kLeft, 322,
         {{"footprint", "footprint (median, min–max)"},
          {"resident", "resident"},
          {"trend", "Theil–Sen"},
          {"trend-interval", "Sen's interval"},
          {"swap", "process swap"},
          {"host-swap", "host swap"}});
  return svg.str();
}

std::string pressure_svg(const PressureChart& p) {
  Svg svg(kWidth, 190, "pressure", "chart pressure", "host memory pressure");
  const Scale x = time_scale(p.from_ms, p.to_ms);
  svg.text(4, 26, "level", "lane");
  // A sample holds its level until the next one: where samples are sparser
  // than buckets, each level spans up to the usual spacing of the samples, so
  // a short stage is a strip, not slivers, and a real gap stays a gap.
  std::vector<int64_t> steps;
  for (size_t i = 1; i < p.level.size(); ++i) steps.push_back(p.level[i].t0_ms - p.level[i - 1].t0_ms);
  std::sort(steps.begin(), steps.end());
  const int64_t usual = steps.empty() ? 0 : steps[steps.size() / 2];
  for (size_t i = 0; i < p.level.size(); ++i) {
    const Bucket& b = p.level[i];
    int64_t end = std::max(b.t1_ms, b.t0_ms + usual);
    if (i + 1 < p.level.size()) end = std::min(end, p.level[i + 1].t0_ms);
    end = std::min(end, p.to_ms);
    const char* cls = b.max >= 4 ? "level critical" : b.max >= 2 ? "level warn" : "level normal";
    svg.rect(x(static_cast<double>(b.t0_ms)), 12,
             std::max(1.0, x(static_cast<double>(end)) - x(static_cast<double>(b.t0_ms))), 20, cls,
             std::string(cls + 6) + " at " + iso_utc(b.t0_ms));
  }
  const bool psi = p.free_pct.empty() && !p.psi_some.empty();
  const Scale y{0, 100, 140, 44};
  value_axis(svg, y, {0, 50, 100}, kLeft, kWidth - kRight, psi ? "PSI some %" : "free %");
  band(svg, x, y, psi ? p.psi_some : p.free_pct, 1, psi ? "psi" : "free", true);
  time_axis(svg, x, p.from_ms, p.to_ms, 150);
  legend(svg, kLeft, 184,
         {{"level normal", "normal"},
          {"level warn", "warn"},
          {"level critical", "critical"},
          {psi ? "psi" : "free", psi ? "PSI some avg10" : "memory free"}});
  return svg.str();
}

std::string perf_svg(std::string_view figure, const std::vector<const PerfGroup*>& groups) {
  constexpr double kRow = 46, kLabel = 300, kTop = 8;
  const double h = kTop + kRow * static_cast<double>(groups.size()) + 26;
  const std::string unit = figure_unit(figure);
  Svg svg(kWidth, h, "perf-" + std::string(figure), "chart perf", std::string(figure) + " candidate beside baseline");
  for (size_t i = 0; i < groups.size(); ++i) {
    const PerfGroup& g = *groups[i];
    const double top = kTop + kRow * static_cast<double>(i);
    const std::string result = g.evidence ? std::string(to_string(g.evidence->result)) : "not judged";
    double lo = g.cand.min, hi = g.cand.max;
    if (g.base.n) lo = std::min(lo, g.base.min), hi = std::max(hi, g.base.max);
    auto [d0, d1] = nice_range(lo, hi, 4);
    const Scale x{d0, d1, kLabel + 10, kWidth - kRight - 40};
    svg.begin_group("perf-row result-" + result);
    svg.rect(0, top, kWidth, kRow - 2, "row-bg");
    svg.text(4, top + 17, g.workload.empty() ? g.metric : g.workload, "row-label");
    svg.text(4, top + 34, result + (g.source.empty() ? "" : " · " + g.source), "row-result");
    for (double t : nice_ticks(d0, d1, 4)) svg.line(x(t), top + 4, x(t), top + kRow - 8, "grid");
    svg.text(x(d0), top + kRow - 4, num(d0), "tick", Svg::Anchor::Start);
    svg.text(x(d1), top + kRow - 4, num(d1) + " " + unit, "tick", Svg::Anchor::End);
    const double cy = top + 13, by = top + 29;
    for (size_t k = 0; k < g.cand_points.size(); ++k)
      svg.circle(x(g.cand_points[k]), cy + static_cast<double>(k % 5) - 2, 1.4, "pt cand");
    for (size_t k = 0; k < g.base_points.size(); ++k)
      svg.circle(x(g.base_points[k]), by + static_cast<double>(k % 5) - 2, 1.4, "pt base");
    box(svg, x, cy, 10, g.cand, "cand", summary_tip("candidate", g.cand, unit));
    box(svg, x, by, 10, g.base, "base", summary_tip("baseline", g.base, unit));
    if (g.base.n == 0) svg.text(x(d0) + 4, by + 4, "no baseline rows", "note");
    svg.end_group();
  }
  legend(svg, kLabel + 10, h - 6, {{"cand", "candidate"}, {"base", "baseline"}});
  return svg.str();
}

std::string ladder_svg(const std::vector<LadderPoint>& points, const std::optional<int64_t>& reach) {
  Svg svg(kWidth, 260, "ladder", "chart ladder", "long-context TTFT by prompt size, fresh and repeat");
  std::vector<int64_t> sizes;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : points) {
    if (std::find(sizes.begin(), sizes.end(), p.size) == sizes.end()) sizes.push_back(p.size);
    if (p.ttft_ms.n) lo = std::min(lo, p.ttft_ms.min), hi = std::max(hi, p.ttft_ms.max);
  }
  std::sort(sizes.begin(), sizes.end());
  if (!(lo <= hi)) lo = 1, hi = 10;
  lo = std::pow(10.0, std::floor(std::log10(std::max(lo, 1e-3))));
  hi = std::pow(10.0, std::ceil(std::log10(std::max(hi, lo * 10))));
  const Scale y{lo, hi, 220, 16, Scale::Kind::Log};
  value_axis(svg, y, log_ticks(lo, hi), kLeft, kWidth - kRight, "TTFT ms");
  const double slot = (kWidth - kRight - kLeft) / static_cast<double>(std::max<size_t>(1, sizes.size()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double cx = kLeft + slot * (static_cast<double>(i) + 0.5);
    svg.text(cx, 238, std::to_string(sizes[i]) + " tok", "tick", Svg::Anchor::Middle);
    if (reach && sizes[i] == *reach) svg.line(cx + slot / 2, 16, cx + slot / 2, 220, "reach");
    for (const auto& p : points) {
      if (p.size != sizes[i]) continue;
      const bool fresh = p.cache != CacheState::Repeat;
      const double bx = cx + (fresh ? -slot / 6 : slot / 6);
      const std::string cls = fresh ? "fresh" : "repeat";
      const std::string who = std::to_string(p.size) + " tokens " + std::string(to_string(p.cache));
      if (p.ttft_ms.n) {
        const Scale vy = y;
        const double w = std::min(26.0, slot / 4);
        svg.line(bx, vy(p.ttft_ms.p5), bx, vy(p.ttft_ms.p95), cls + " whisker");
        svg.rect(bx - w / 2, vy(p.ttft_ms.p75), w, std::max(1.0, vy(p.ttft_ms.p25) - vy(p.ttft_ms.p75)), cls + " box",
                 summary_tip(who, p.ttft_ms, "ms"));
        svg.line(bx - w / 2, vy(p.ttft_ms.median), bx + w / 2, vy(p.ttft_ms.median), cls + " median");
      }
      if (p.refused)
        svg.text(bx, 30, "✕ " + std::to_string(p.refused) + "/" + std::to_string(p.attempts) + " refused", "refused",
                 Svg::Anchor::Middle);
    }
  }
  legend(svg, kLeft, 256, {{"fresh", "fresh (new prefix)"}, {"repeat", "exact repeat (cache)"}});
  if (reach)
    svg.text(kWidth - kRight, 256, "context reach: " + std::to_string(*reach) + " tokens", "reach-label",
             Svg::Anchor::End);
  return svg.str();
}

std::string bursts_svg(const std::vector<BurstPoint>& points) {
  Svg svg(kWidth, 240, "bursts", "chart bursts", "burst TTFT by burst size");
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : points)
    if (p.ttft_ms.n) lo = std::min(lo, p.ttft_ms.min), hi = std::max(hi, p.ttft_ms.max);
  if (!(lo <= hi)) lo = 0, hi = 1;
  auto [y0, y1] = nice_range(std::min(0.0, lo), hi, 5);
  const Scale y{y0, y1, 196, 28};
  value_axis(svg, y, nice_ticks(y0, y1, 5), kLeft, kWidth - kRight, "TTFT ms");
  const double slot = (kWidth - kRight - kLeft) / static_cast<double>(std::max<size_t>(1, points.size()));
  for (size_t i = 0; i < points.size(); ++i) {
    const BurstPoint& p = points[i];
    const double cx = kLeft + slot * (static_cast<double>(i) + 0.5), w = std::min(40.0, slot / 3);
    svg.text(cx, 214, "burst of " + std::to_string(p.n), "tick", Svg::Anchor::Middle);
    if (p.ttft_ms.n) {
      svg.line(cx, y(p.ttft_ms.p5), cx, y(p.ttft_ms.p95), "burst whisker");
      svg.rect(cx - w / 2, y(p.ttft_ms.p75), w, std::max(1.0, y(p.ttft_ms.p25) - y(p.ttft_ms.p75)), "burst box",
               summary_tip("burst of " + std::to_string(p.n), p.ttft_ms, "ms"));
      svg.line(cx - w / 2, y(p.ttft_ms.median), cx + w / 2, y(p.ttft_ms.median), "burst median");
    }
    std::string note = p.summaries ? std::to_string(p.serialized) + "/" + std::to_string(p.summaries) + " serialized"
                                   : "no burst summaries";
    if (p.peak_decoding) note += ", peak " + num(*p.peak_decoding) + "/" + std::to_string(p.n) + " decoding";
    svg.text(cx, 20, note, p.serialized ? "serialized" : "note", Svg::Anchor::Middle);
  }
  return svg.str();
}

std::string speed_svg(const SpeedChart& c) {
  Svg svg(kWidth, 250, "speed-" + c.figure, "chart speed", c.figure + " over the campaign");
  const Scale x = time_scale(c.from_ms, c.to_ms);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : c.series) extent(s.buckets, 1, lo, hi);
  if (!(lo <= hi)) lo = 0, hi = 1;
  constexpr double kTop = 16, kBottom = 200;
  const bool log = lo > 0 && hi / lo > 20;
  Scale y;
  if (log) {
    y = Scale{lo, hi, kBottom, kTop, Scale::Kind::Log};
    value_axis(svg, y, log_ticks(lo, hi), kLeft, kWidth - kRight, c.unit);
  } else {
    auto [y0, y1] = nice_range(std::min(0.0, lo), hi, 5);
    y = Scale{y0, y1, kBottom, kTop};
    value_axis(svg, y, nice_ticks(y0, y1, 5), kLeft, kWidth - kRight, c.unit);
  }
  for (const auto& st : c.stages) {
    const double sx = x(static_cast<double>(st.start_ms));
    svg.line(sx, kTop, sx, kBottom, "stage-edge");
    svg.text(sx + 3, kTop + 10, std::string(to_string(st.kind)), "stage-name");
  }
  std::vector<std::pair<std::string, std::string>> keys;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const std::string cls = "speed-s" + std::to_string(i);
    band(svg, x, y, c.series[i].buckets, 1, cls, i == 0);
    keys.push_back({cls, c.series[i].workload + " (" + std::to_string(c.series[i].n) + ")"});
  }
  time_axis(svg, x, c.from_ms, c.to_ms, kBottom + 8);
  legend(svg, kLeft, 242, keys);
  return svg.str();
}

}  // namespace soak::report
