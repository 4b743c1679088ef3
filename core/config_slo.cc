// The config's "slo" block (core/config.h SloSettings, docs/DESIGN.md §3.11):
// absolute floors that apply with or without a baseline, and the rule for how
// many breaching rows make a failure.
#include <algorithm>

#include "core/config_schema.h"

namespace soak {

int64_t slo_floor_ms(const std::vector<SloPoint>& points, int64_t size) {
  if (points.empty()) return 0;
  if (points.size() == 1 || size <= points.front().size) return points.front().max_ms;
  // The segment that holds `size`, else the last one (extended at its slope).
  size_t i = 1;
  while (i + 1 < points.size() && size > points[i].size) ++i;
  const SloPoint& a = points[i - 1];
  const SloPoint& b = points[i];
  const double slope = static_cast<double>(b.max_ms - a.max_ms) / static_cast<double>(b.size - a.size);
  return a.max_ms + static_cast<int64_t>(slope * static_cast<double>(size - a.size) + 0.5);
}

namespace schema {

namespace {

constexpr const char* kPointsExample = "[{\"size\": 0, \"max\": \"90s\"}, {\"size\": 12288, \"max\": \"300s\"}]";

// [{"size": tokens, "max": duration}, ...], sizes rising, floors never falling.
void read_points(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex,
                 std::vector<SloPoint>& out) {
  if (!v.is_array() || v.empty()) {
    ctx.err(p, "must be a non-empty array of {\"size\": tokens, \"max\": duration} points", ex);
    return;
  }
  std::vector<SloPoint> points;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = index_path(p, i);
    const json& e = v[i];
    if (!expect_object(ctx, e, at, "{\"size\": 12288, \"max\": \"300s\"}")) return;
    report_unknown_keys(ctx, e, at, {"size", "max"});
    SloPoint pt;
    if (!e.contains("size") || !e.contains("max")) {
      ctx.err(at, "needs both \"size\" (prompt tokens) and \"max\" (a duration)",
              "{\"size\": 12288, \"max\": \"300s\"}");
      return;
    }
    if (!read_int(ctx, e.at("size"), join_path(at, "size"), pt.size, 0, kMaxLongContextTokens, "12288")) return;
    if (!read_duration(ctx, e.at("max"), join_path(at, "max"), pt.max_ms, "\"300s\"", Zero::Reject)) return;
    if (!points.empty() && pt.size <= points.back().size) {
      ctx.err(join_path(at, "size"), "must be larger than the size of the point before it (sizes rise)",
              std::to_string(points.back().size + 1024));
      return;
    }
    if (!points.empty() && pt.max_ms < points.back().max_ms) {
      ctx.err(join_path(at, "max"),
              "must not be below the floor of the point before it (a larger prompt never gets less time)",
              "\"" + format_duration(points.back().max_ms) + "\"");
      return;
    }
    points.push_back(pt);
  }
  out = std::move(points);
}

void read_ttft(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, SloSettings& s) {
  read_points(ctx, v, p, ex, s.max_ttft);
}

void read_turn_wall(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, SloSettings& s) {
  read_points(ctx, v, p, ex, s.max_turn_wall);
}

}  // namespace

const Section<SloSettings>& slo_section() {
  using S = SloSettings;
  static const Section<S> s{
      "{\"min_decode_tps\": 3, \"short_wall\": \"180s\"}",
      {
          number("min_decode_tps", &S::min_decode_tps, 0, 1e6, "3 (tokens/s; 0 turns the decode floor off)"),
          custom<S>("ttft", Kind::List, kPointsExample, read_ttft),
          duration("short_wall", &S::max_short_wall_ms, "\"180s\""),
          custom<S>("turn_wall", Kind::List, "[{\"size\": 0, \"max\": \"180s\"}, {\"size\": 12288, \"max\": \"300s\"}]",
                    read_turn_wall),
          duration("warm_ttft", &S::max_warm_ttft_ms, "\"90s\""),
          integer("min_breaches", &S::min_breaches, 1, "3"),
          number("max_breach_share", &S::max_breach_share, 0, 1, "0.1"),
      }};
  return s;
}

}  // namespace schema
}  // namespace soak
