// Absolute floors (docs/DESIGN.md §3.11): what is too slow to use whatever a
// baseline does, and a launch whose default output cap would cut a real
// agent's long answer. See judges/floors.h for the metric rows.
#include "judges/floors.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "judges/internal.h"
#include "judges/stats.h"

namespace soak {

using ojson = nlohmann::ordered_json;

namespace {

ojson points_json(const std::vector<SloPoint>& ps) {
  ojson a = ojson::array();
  for (const auto& p : ps) a.push_back({{"size", p.size}, {"max_ms", p.max_ms}});
  return a;
}

std::vector<SloPoint> points_from(const ojson& a) {
  std::vector<SloPoint> out;
  for (const auto& p : a) out.push_back({p.at("size").get<int64_t>(), p.at("max_ms").get<int64_t>()});
  return out;
}

}  // namespace

void floors_to_json(const std::optional<SloSettings>& slo, const std::optional<LaunchCap>& cap, ojson& j) {
  if (slo)
    j["slo"] = {{"min_decode_tps", slo->min_decode_tps},    {"ttft", points_json(slo->max_ttft)},
                {"short_wall_ms", slo->max_short_wall_ms},  {"turn_wall", points_json(slo->max_turn_wall)},
                {"warm_ttft_ms", slo->max_warm_ttft_ms},    {"min_breaches", slo->min_breaches},
                {"max_breach_share", slo->max_breach_share}};
  if (cap)
    j["launch_cap"] = {
        {"tokens", cap->tokens}, {"min_tokens", cap->min_tokens}, {"accepted", cap->accepted}, {"lift", cap->lift}};
}

void floors_from_json(const ojson& j, std::optional<SloSettings>& slo, std::optional<LaunchCap>& cap) {
  if (j.contains("slo")) {
    const auto& s = j.at("slo");
    SloSettings f;
    f.min_decode_tps = s.at("min_decode_tps").get<double>();
    f.max_ttft = points_from(s.at("ttft"));
    f.max_short_wall_ms = s.at("short_wall_ms").get<int64_t>();
    f.max_turn_wall = points_from(s.at("turn_wall"));
    f.max_warm_ttft_ms = s.at("warm_ttft_ms").get<int64_t>();
    f.min_breaches = s.at("min_breaches").get<int>();
    f.max_breach_share = s.at("max_breach_share").get<double>();
    slo = f;
  }
  if (j.contains("launch_cap")) {
    const auto& c = j.at("launch_cap");
    LaunchCap l;
    l.tokens = c.at("tokens").get<int64_t>();
    l.min_tokens = c.at("min_tokens").get<int64_t>();
    l.accepted = c.at("accepted").get<bool>();
    l.lift = c.at("lift").get<std::string>();
    cap = l;
  }
}

namespace judge_detail {
namespace {

// Figures a floor bounds: times must stay at or under it, rates at or over.
enum class Bound { AtMost, AtLeast };

// One floor over its rows: per row the figure and the floor it must keep.
struct Group {
  std::vector<const ProbeResult*> rows;
  std::vector<double> values;
  std::vector<double> floors;
};

// How a floor is named in reasons: the key, where its default comes from.
struct FloorText {
  std::string measure;  // "decode", "time to first token", ...
  std::string key;      // "slo.min_decode_tps"
  std::string unit;     // "tok/s" or "s"
  std::string origin;   // the seed line of its default, or "configured"
};

// A row the floors read: one request on its own (a burst or capacity member
// waits for the others by design), a completion, not soakd's own fault.
bool single(const ProbeResult& r) {
  return r.client_concurrency <= 1 && is_completion(r) && !is_harness(r) && r.kind != ProbeKind::Embeddings &&
         r.kind != ProbeKind::Rerank;
}

// ms shown as seconds, rates as they are.
std::string shown(double v, const FloorText& t) { return t.unit == "s" ? num(v / 1000.0) + " s" : num(v) + " tok/s"; }

void judge_group(const Context& c, Judgement& j, const std::string& name, const Group& g, Bound bound,
                 const FloorText& t, const std::string& floor_text) {
  const SloSettings& slo = *c.in.recipe.slo;
  const auto n = static_cast<int64_t>(g.rows.size());
  if (n == 0) return;
  std::vector<int64_t> ids;
  double worst = g.values.front(), best = g.values.front(), floor_at_largest = g.floors.front();
  for (size_t i = 0; i < g.rows.size(); ++i) {
    const double v = g.values[i], f = g.floors[i];
    const bool breach = bound == Bound::AtMost ? v > f : v < f;
    if (breach) ids.push_back(g.rows[i]->id);
    worst = bound == Bound::AtMost ? std::max(worst, v) : std::min(worst, v);
    best = bound == Bound::AtMost ? std::min(best, v) : std::max(best, v);
    floor_at_largest = bound == Bound::AtMost ? std::max(floor_at_largest, f) : floor_at_largest;
  }
  const double median = stats::median(g.values);
  const auto breaches = static_cast<int64_t>(ids.size());
  const double share = static_cast<double>(breaches) / static_cast<double>(n);
  // Every row when there are fewer than min_breaches, but one row alone never.
  const int64_t min_b = std::max(1, slo.min_breaches);
  const int64_t needed = std::max(std::min(min_b, n), std::min<int64_t>(min_b, 2));
  const bool fail = breaches > 0 && breaches >= needed && share >= slo.max_breach_share;
  const std::string figures_text = format("%lld row(s), median %s, slowest %s", static_cast<long long>(n),
                                          shown(median, t).c_str(), shown(worst, t).c_str());
  std::string reason;
  if (fail) {
    reason = format("%s past the floor on %lld of %lld rows (%.0f%%; rows %s): median %s, slowest %s; floor %s",
                    t.measure.c_str(), static_cast<long long>(breaches), static_cast<long long>(n), share * 100,
                    id_list(ids).c_str(), shown(median, t).c_str(), shown(worst, t).c_str(), floor_text.c_str());
  } else {
    reason = figures_text + "; floor " + floor_text;
    if (breaches > 0)
      reason += format("; %lld row(s) past it (rows %s), fewer than the %lld rows and %.0f%% a failure needs",
                       static_cast<long long>(breaches), id_list(ids).c_str(), static_cast<long long>(needed),
                       slo.max_breach_share * 100);
  }
  auto m = metric(name, fail ? MetricResult::Fail : MetricResult::Pass, reason);
  m.n = n;
  set_numbers(m, median, share, best, worst, floor_at_largest, 1);
  if (fail) j.find(Severity::Failure, "too slow to use: " + name + ": " + reason);
  j.add(std::move(m));
}

// "the default, from S1:108: ..." when the value is soakd's default.
std::string origin(bool is_default, const char* seed) { return is_default ? std::string(seed) : "configured"; }

std::string points_text(const std::vector<SloPoint>& ps) {
  std::string s;
  for (size_t i = 0; i < ps.size(); ++i)
    s += (i ? ", " : "") + num(static_cast<double>(ps[i].max_ms) / 1000.0) + " s at " + size_label(ps[i].size);
  return s;
}

// A row's decode rate for the floor: soakd's own, (tokens - 1) over the time
// from the first token to the last, which is exact on a short answer; the
// server's only where the client has none (a non-stream answer) and the
// answer is long enough that its count of n tokens over n - 1 intervals says
// little (llama.cpp's predicted_per_second is 4.2 tok/s for three tokens
// 357 ms apart).
constexpr int64_t kMinServerRateTokens = 16;

std::optional<double> decode_rate(const ProbeResult& r) {
  if (!is_clean(r) || r.timing_artifact || !perf_judged(r.kind)) return std::nullopt;
  auto usable = [](std::optional<double> v) { return v && std::isfinite(*v) && *v > 0; };
  if (usable(r.client_decode_tps)) return r.client_decode_tps;
  if (usable(r.server_predicted_tps) &&
      r.server_predicted_n.value_or(r.completion_tokens.value_or(0)) >= kMinServerRateTokens)
    return r.server_predicted_tps;
  return std::nullopt;
}

void decode_floor(const Context& c, const std::vector<const ProbeResult*>& timed, Judgement& j,
                  const SloSettings& slo) {
  if (slo.min_decode_tps <= 0) return;
  Group g;
  for (const ProbeResult* r : timed) {
    if (!single(*r)) continue;
    const auto v = decode_rate(*r);
    if (!v) continue;
    g.rows.push_back(r);
    g.values.push_back(*v);
    g.floors.push_back(slo.min_decode_tps);
  }
  const FloorText t{
      "decode", "slo.min_decode_tps", "tok/s",
      origin(slo.min_decode_tps == kDefaultSloMinDecodeTps, "default: 2.8 tok/s was too slow to use, S1:108, S1:164")};
  judge_group(c, j, "slo/decode_tps", g, Bound::AtLeast, t,
              format("%s %s tok/s (%s)", t.key.c_str(), num(slo.min_decode_tps).c_str(), t.origin.c_str()));
}

// Time to first token by prompt size: long-context rows per configured size,
// the rest ("short") each at its own prompt's size. Agent turns have their
// own floor (turn wall), exact repeats theirs (warm retry).
void ttft_floor(const Context& c, const std::vector<const ProbeResult*>& timed, Judgement& j, const SloSettings& slo) {
  std::vector<const ProbeResult*> rows;
  for (const ProbeResult* r : timed)
    if (single(*r) && !is_session_row(*r) && r->cache_state != CacheState::Repeat) rows.push_back(r);
  std::vector<std::pair<const ProbeResult*, double>> f;
  f = figures_of(kTtft, rows).rows;
  std::map<int64_t, Group> groups;  // -1: short prompts
  for (const auto& [r, v] : f) {
    const bool sized = r->kind == ProbeKind::LongContext && r->size_tokens;
    Group& g = groups[sized ? *r->size_tokens : -1];
    g.rows.push_back(r);
    g.values.push_back(v);
    g.floors.push_back(
        static_cast<double>(slo_floor_ms(slo.max_ttft, sized ? *r->size_tokens : r->prompt_tokens.value_or(0))));
  }
  const bool is_default = slo.max_ttft == SloSettings{}.max_ttft;
  const FloorText t{
      "time to first token", "slo.ttft", "s",
      origin(is_default, "default: no first token within 90 s was rejected, S1:106; a 12K probe past 300 s, S1:117")};
  for (const auto& [size, g] : groups) {
    const std::string label = size < 0 ? "short" : size_label(size);
    const std::string at = size < 0 ? "at each row's prompt size" : "at " + size_label(size);
    judge_group(
        c, j, "slo/ttft/" + label, g, Bound::AtMost, t,
        format("%s %s (%s; %s)", t.key.c_str(), at.c_str(), points_text(slo.max_ttft).c_str(), t.origin.c_str()) +
            (size < 0 ? "" : format(" = %s s", num(g.floors.front() / 1000.0).c_str())));
  }
}

// One floor in seconds for every row of `rows` (the short wall, the warm retry).
void fixed_floor(const Context& c, Judgement& j, const std::vector<const ProbeResult*>& rows, const PerfMetric& m,
                 int64_t floor_ms, const std::string& name, const FloorText& t) {
  std::vector<std::pair<const ProbeResult*, double>> f;
  f = figures_of(m, rows).rows;
  Group g;
  for (const auto& [r, v] : f) {
    g.rows.push_back(r);
    g.values.push_back(v);
    g.floors.push_back(static_cast<double>(floor_ms));
  }
  judge_group(
      c, j, name, g, Bound::AtMost, t,
      format("%s %s s (%s)", t.key.c_str(), num(static_cast<double>(floor_ms) / 1000.0).c_str(), t.origin.c_str()));
}

// A short answer's whole wall: the functional probes that ask for a few words
// with thinking off.
void short_wall_floor(const Context& c, const std::vector<const ProbeResult*>& timed, Judgement& j,
                      const SloSettings& slo) {
  std::vector<const ProbeResult*> rows;
  for (const ProbeResult* r : timed) {
    const bool short_kind = r->kind == ProbeKind::Identity || r->kind == ProbeKind::Marker ||
                            r->kind == ProbeKind::Stream || r->kind == ProbeKind::StrictJson ||
                            r->kind == ProbeKind::ToolCall;
    if (short_kind && single(*r) && r->thinking != std::optional<bool>(true)) rows.push_back(r);
  }
  fixed_floor(c, j, rows, kWall, slo.max_short_wall_ms, "slo/short_wall",
              FloorText{"a short answer's wall", "slo.short_wall", "s",
                        origin(slo.max_short_wall_ms == kDefaultSloShortWallMs,
                               "default: short prose over 180 s was too slow to use, S1:108")});
}

// An agent turn's wall per context band, the floor taken at the band's top.
void turn_wall_floor(const Context& c, const std::vector<const ProbeResult*>& timed, Judgement& j,
                     const SloSettings& slo) {
  std::vector<const ProbeResult*> rows;
  for (const ProbeResult* r : timed)
    if (is_session_row(*r) && single(*r)) rows.push_back(r);
  std::vector<std::pair<const ProbeResult*, double>> f;
  f = figures_of(kWall, rows).rows;
  const int64_t width = std::max<int64_t>(1, c.in.recipe.agent.band_tokens);
  std::map<int64_t, Group> bands;
  for (const auto& [r, v] : f) {
    const int64_t lo = r->size_tokens.value_or(0);
    Group& g = bands[lo];
    g.rows.push_back(r);
    g.values.push_back(v);
    g.floors.push_back(static_cast<double>(slo_floor_ms(slo.max_turn_wall, lo + width)));
  }
  const bool is_default = slo.max_turn_wall == SloSettings{}.max_turn_wall;
  const FloorText t{
      "an agent turn's wall", "slo.turn_wall", "s",
      origin(is_default, "default: short prose over 180 s, S1:108; a 12K probe past the 300 s client wait, S1:117")};
  for (const auto& [lo, g] : bands) {
    const std::string band = size_label(lo) + "-" + size_label(lo + width);
    judge_group(
        c, j, "slo/turn_wall/" + band, g, Bound::AtMost, t,
        format("%s at %s tokens = %s s (%s; %s)", t.key.c_str(), size_label(lo + width).c_str(),
               num(g.floors.front() / 1000.0).c_str(), points_text(slo.max_turn_wall).c_str(), t.origin.c_str()));
  }
}

// The first token of an exact repeat: what a warm retry gets.
void warm_floor(const Context& c, const std::vector<const ProbeResult*>& timed, Judgement& j, const SloSettings& slo) {
  std::vector<const ProbeResult*> rows;
  for (const ProbeResult* r : timed)
    if (single(*r) && r->cache_state == CacheState::Repeat) rows.push_back(r);
  fixed_floor(c, j, rows, kTtft, slo.max_warm_ttft_ms, "slo/warm_ttft",
              FloorText{"a warm retry's first token", "slo.warm_ttft", "s",
                        origin(slo.max_warm_ttft_ms == kDefaultSloWarmTtftMs,
                               "default: a warm retry with no first token in 90 s was rejected, S1:106")});
}

}  // namespace

void judge_floors(const Context& c, Judgement& j) {
  if (!c.in.recipe.slo || c.in.recipe.workload != WorkloadKind::Chat) return;
  const SloSettings& slo = *c.in.recipe.slo;
  // The canary's warm-up pages the model in: its first answers may be slow by
  // design, so no floor reads them (their failures still count elsewhere).
  const std::vector<const ProbeResult*> timed = measured_rows(c.cand);
  decode_floor(c, timed, j, slo);
  ttft_floor(c, timed, j, slo);
  short_wall_floor(c, timed, j, slo);
  turn_wall_floor(c, timed, j, slo);
  warm_floor(c, timed, j, slo);
}

void judge_launch_cap(const Context& c, Judgement& j) {
  if (!c.in.recipe.launch_cap || c.in.recipe.workload != WorkloadKind::Chat) return;
  const LaunchCap& cap = *c.in.recipe.launch_cap;
  const bool unlimited = cap.tokens < 0;
  const bool below = !unlimited && cap.tokens < cap.min_tokens;
  std::string reason;
  if (unlimited)
    reason = format("the launch sets no default output cap (unlimited); limits.min_server_cap %lld",
                    static_cast<long long>(cap.min_tokens));
  else
    reason = format(
        "the launch caps every answer at %lld tokens when a request names no limit (its launch fingerprint), %s "
        "limits.min_server_cap %lld",
        static_cast<long long>(cap.tokens), below ? "below" : "at or above", static_cast<long long>(cap.min_tokens));
  const bool held = below && !cap.accepted;
  if (below && cap.accepted) reason += "; accepted (accept_server_cap: true)";
  if (held) {
    reason +=
        " (S1:48: MLX-LM's 512-token default cut long answers; most probes answer far below a cap, so it is "
        "found here before it bites)";
    if (!cap.lift.empty()) reason += ": " + cap.lift;
    reason += "; or set accept_server_cap: true on the candidate";
  }
  auto m = metric("launch/server_cap", held ? MetricResult::Marginal : MetricResult::Pass, reason);
  m.n = 1;
  set_numbers(m, static_cast<double>(cap.tokens), 0, 0, 0, static_cast<double>(cap.min_tokens), 1);
  if (held) j.find(Severity::LaunchHold, "server cap (held, not promoted): " + reason);
  j.add(std::move(m));
}

}  // namespace judge_detail
}  // namespace soak
