#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/hash.h"

namespace soak {

using json = nlohmann::json;
namespace fs = std::filesystem;

// ============================================================== durations
Result<int64_t> parse_duration(std::string_view s) {
  if (s.empty()) return make_error("empty duration");
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == start) return make_error("expected a number in \"" + std::string(s) + "\"");
    int64_t n = 0;
    for (size_t k = start; k < i; ++k) {
      n = n * 10 + (s[k] - '0');
      if (n > 1'000'000'000'000LL) return make_error("number too large in \"" + std::string(s) + "\"");
    }
    size_t ustart = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    int64_t mult = 0;
    if (unit == "ms") mult = 1;
    else if (unit == "s") mult = 1000;
    else if (unit == "m") mult = kMinute;
    else if (unit == "h") mult = kHour;
    else if (unit == "d") mult = kDay;
    else if (unit.empty())
      return make_error("missing unit in \"" + std::string(s) + "\" (use ms, s, m, h or d)");
    else
      return make_error("unknown unit \"" + std::string(unit) + "\" (use ms, s, m, h or d)");
    total += n * mult;
    any = true;
  }
  if (!any) return make_error("empty duration");
  return total;
}

std::string format_duration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  struct U { int64_t ms; const char* name; };
  static constexpr U kUnits[] = {{kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.name;
      ms %= u.ms;
    }
  }
  return out;
}

int64_t StageDurations::length_ms(StageKind k) const {
  switch (k) {
    case StageKind::Smoke: return smoke_ms;
    case StageKind::Canary: return canary_ms;
    case StageKind::Gate: return gate_ms;
    case StageKind::Soak: return soak_ms;
  }
  return 0;
}

// ============================================================== paths
std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0 || path == "~") {
    const char* home = std::getenv("HOME");
    std::string h = home ? home : "";
    return h + path.substr(1);
  }
  return path;
}

static std::string state_dir() {
#if defined(__APPLE__)
  return expand_home("~/Library/Application Support/soakd");
#else
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/soakd";
  return expand_home("~/.local/state/soakd");
#endif
}

std::string default_store_path() { return state_dir() + "/soakd.db"; }

std::string default_log_path() {
#if defined(__APPLE__)
  return expand_home("~/Library/Logs/soakd/soakd.log");
#else
  return state_dir() + "/soakd.log";
#endif
}

std::string default_config_path() {
#if defined(__APPLE__)
  return state_dir() + "/soakd.json";
#else
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/soakd/soakd.json";
  return expand_home("~/.config/soakd/soakd.json");
#endif
}

// ============================================================== validation helpers
namespace {

struct Ctx {
  std::string file;
  std::vector<std::string> errors;
  void err(const std::string& path, const std::string& what, const std::string& example = "") {
    std::string line = file + ": " + (path.empty() ? std::string("(top level)") : path) + ": " + what;
    if (!example.empty()) line += " (e.g. " + example + ")";
    errors.push_back(std::move(line));
  }
};

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "a number";
  }
}

// Walks one JSON object: each known key is read through a handler; leftovers are
// unknown keys and become errors with a "did you mean" hint.
class Obj {
 public:
  Obj(Ctx& ctx, const json& j, std::string path) : ctx_(ctx), j_(j), path_(std::move(path)) {}

  bool is_object(const std::string& example) {
    if (j_.is_object()) return true;
    ctx_.err(path_, std::string("must be an object, not ") + json_type_name(j_), example);
    return false;
  }

  // Calls f(value, path) when the key is present.
  void on(const std::string& key, const std::function<void(const json&, const std::string&)>& f) {
    known_.push_back(key);
    if (!j_.is_object()) return;
    auto it = j_.find(key);
    if (it == j_.end()) return;
    f(*it, join_path(path_, key));
  }

  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key); }

  void finish() {
    if (!j_.is_object()) return;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
      std::string best;
      size_t best_d = 3;
      for (const auto& k : known_) {
        size_t d = edit_distance(it.key(), k);
        if (d < best_d) {
          best_d = d;
          best = k;
        }
      }
      std::string msg = "unknown key \"" + it.key() + "\"";
      if (!best.empty()) msg += "; did you mean \"" + best + "\"?";
      std::string allowed;
      for (const auto& k : known_) allowed += (allowed.empty() ? "" : ", ") + k;
      msg += " Allowed here: " + allowed;
      ctx_.err(join_path(path_, it.key()), msg);
    }
  }

 private:
  Ctx& ctx_;
  const json& j_;
  std::string path_;
  std::vector<std::string> known_;
};

void read_string(Ctx& ctx, const json& v, const std::string& path, std::string& out,
                 const std::string& example) {
  if (!v.is_string()) {
    ctx.err(path, std::string("must be a string, not ") + json_type_name(v), example);
    return;
  }
  out = v.get<std::string>();
  if (out.empty()) ctx.err(path, "must not be empty", example);
}

void read_duration(Ctx& ctx, const json& v, const std::string& path, int64_t& out,
                   const std::string& example, bool allow_zero = false) {
  if (!v.is_string()) {
    ctx.err(path, std::string("must be a duration string with a unit, not ") + json_type_name(v),
            example);
    return;
  }
  auto r = parse_duration(v.get<std::string>());
  if (!r) {
    ctx.err(path, r.message(), example);
    return;
  }
  if (*r < 0 || (*r == 0 && !allow_zero)) {
    ctx.err(path, "must be greater than zero", example);
    return;
  }
  out = *r;
}

void read_int(Ctx& ctx, const json& v, const std::string& path, int64_t& out, int64_t min,
              const std::string& example) {
  if (!v.is_number_integer()) {
    ctx.err(path, std::string("must be an integer, not ") + json_type_name(v), example);
    return;
  }
  int64_t x = v.get<int64_t>();
  if (x < min) {
    ctx.err(path, "must be at least " + std::to_string(min), example);
    return;
  }
  out = x;
}

void read_double(Ctx& ctx, const json& v, const std::string& path, double& out, double min,
                 double max, const std::string& example) {
  if (!v.is_number()) {
    ctx.err(path, std::string("must be a number, not ") + json_type_name(v), example);
    return;
  }
  double x = v.get<double>();
  if (!(x >= min && x <= max)) {
    std::ostringstream os;
    os << "must be between " << min << " and " << max;
    ctx.err(path, os.str(), example);
    return;
  }
  out = x;
}

void read_bool(Ctx& ctx, const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) {
    ctx.err(path, std::string("must be true or false, not ") + json_type_name(v), "true");
    return;
  }
  out = v.get<bool>();
}

template <class T>
void read_positive_list(Ctx& ctx, const json& v, const std::string& path, std::vector<T>& out,
                        const std::string& example) {
  if (!v.is_array() || v.empty()) {
    ctx.err(path, "must be a non-empty array of positive integers", example);
    return;
  }
  std::vector<T> tmp;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    if (!e.is_number_integer() || e.get<int64_t>() <= 0) {
      ctx.err(path + "[" + std::to_string(i) + "]", "must be a positive integer", example);
      return;
    }
    tmp.push_back(static_cast<T>(e.get<int64_t>()));
  }
  out = std::move(tmp);
}

// ---- campaign settings (shared by "defaults" and each candidate) ----
void read_stages(Ctx& ctx, const json& v, const std::string& path, StageDurations& s) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"canary\": \"2h\", \"gate\": \"24h\"}")) return;
  o.on("smoke", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, s.smoke_ms, "\"15m\""); });
  o.on("canary", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, s.canary_ms, "\"2h\""); });
  o.on("gate", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, s.gate_ms, "\"24h\""); });
  o.on("soak", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, s.soak_ms, "\"7d\""); });
  o.on("grace", [&](const json& x, const std::string& p) {
    read_double(ctx, x, p, s.grace_fraction, 0.0, 10.0, "0.25 (a stage may run 25% past its length to make up gaps)");
  });
  o.finish();
}

void read_cadence(Ctx& ctx, const json& v, const std::string& path, Cadences& c) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"functional\": \"10m\", \"burst\": \"30m\"}")) return;
  o.on("functional", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.functional_ms, "\"10m\""); });
  o.on("long_context", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.long_context_ms, "\"1h\""); });
  o.on("burst", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.burst_ms, "\"30m\""); });
  o.on("cancel", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.cancel_ms, "\"30m\""); });
  o.on("scrape", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.scrape_ms, "\"1m\""); });
  o.on("gate_pause", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.gate_pause_ms, "\"2s\"", true); });
  o.on("soak_traffic", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.soak_traffic_ms, "\"1m\""); });
  o.on("soak_heavy", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.soak_heavy_ms, "\"6h\""); });
  o.on("build_poll", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, c.build_poll_ms, "\"5m\""); });
  o.finish();
}

void read_limits(Ctx& ctx, const json& v, const std::string& path, Limits& l) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"wall_timeout\": \"15m\", \"stall_timeout\": \"2m\"}")) return;
  o.on("wall_timeout", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, l.wall_timeout_ms, "\"15m\""); });
  o.on("stall_timeout", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, l.stall_timeout_ms, "\"2m\""); });
  o.on("connect_timeout", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, l.connect_timeout_ms, "\"10s\""); });
  o.on("max_response_bytes", [&](const json& x, const std::string& p) { read_int(ctx, x, p, l.max_response_bytes, 1024, "8388608"); });
  o.finish();
}

void read_gate(Ctx& ctx, const json& v, const std::string& path, GateRules& g) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"min_completed\": 1000}")) return;
  o.on("min_completed", [&](const json& x, const std::string& p) { read_int(ctx, x, p, g.min_completed, 1, "1000"); });
  o.on("max_failure_ratio", [&](const json& x, const std::string& p) { read_double(ctx, x, p, g.max_failure_ratio, 0, 1, "0.01"); });
  o.on("min_coverage", [&](const json& x, const std::string& p) { read_double(ctx, x, p, g.min_coverage, 0, 1, "0.9"); });
  o.finish();
}

void read_judge(Ctx& ctx, const json& v, const std::string& path, JudgeRules& r) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"alpha\": 0.01, \"effect_floor\": 0.1}")) return;
  o.on("alpha", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.alpha, 1e-9, 0.5, "0.01"); });
  o.on("effect_floor", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.effect_floor, 0, 10, "0.1"); });
  o.on("hold_band", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.hold_band, 0, 10, "0.05"); });
  o.on("tail_tolerance", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.tail_tolerance, 0, 100, "0.25"); });
  o.on("min_samples", [&](const json& x, const std::string& p) {
    int64_t n = r.min_samples;
    read_int(ctx, x, p, n, 2, "5");
    r.min_samples = static_cast<int>(n);
  });
  o.on("max_invalid_ratio", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.max_invalid_ratio, 0, 1, "0.05"); });
  o.on("repeated_5xx", [&](const json& x, const std::string& p) {
    int64_t n = r.repeated_5xx;
    read_int(ctx, x, p, n, 1, "3");
    r.repeated_5xx = static_cast<int>(n);
  });
  o.finish();
}

void read_soak(Ctx& ctx, const json& v, const std::string& path, SoakRules& r) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"max_footprint_growth\": 0.1}")) return;
  o.on("max_footprint_growth", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.max_footprint_growth, 0, 100, "0.1"); });
  o.on("max_footprint_slope_mb_per_h", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.max_footprint_slope_mb_per_h, 0, 1e9, "50"); });
  o.on("max_decode_drift", [&](const json& x, const std::string& p) { read_double(ctx, x, p, r.max_decode_drift, 0, 1, "0.15"); });
  o.finish();
}

void read_guard(Ctx& ctx, const json& v, const std::string& path, GuardRules& g) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"swap_growth_mb\": 500}")) return;
  o.on("swap_growth_mb", [&](const json& x, const std::string& p) {
    int64_t mb = g.swap_growth_bytes / (1000 * 1000);
    read_int(ctx, x, p, mb, 1, "500");
    g.swap_growth_bytes = mb * 1000 * 1000;
  });
  o.on("swapouts_growth", [&](const json& x, const std::string& p) { read_int(ctx, x, p, g.swapouts_growth, 1, "1000"); });
  o.on("window", [&](const json& x, const std::string& p) { read_duration(ctx, x, p, g.window_ms, "\"10m\""); });
  o.on("pressure_critical_trips", [&](const json& x, const std::string& p) { read_bool(ctx, x, p, g.pressure_critical_trips); });
  o.finish();
}

void read_sampling(Ctx& ctx, const json& v, const std::string& path, Sampling& s) {
  Obj o(ctx, v, path);
  if (!o.is_object("{\"temperature\": 0.6, \"top_p\": 0.95, \"top_k\": 20}")) return;
  o.on("temperature", [&](const json& x, const std::string& p) { read_double(ctx, x, p, s.temperature, 0, 2, "0.6"); });
  o.on("top_p", [&](const json& x, const std::string& p) { read_double(ctx, x, p, s.top_p, 0, 1, "0.95"); });
  o.on("top_k", [&](const json& x, const std::string& p) {
    int64_t k = s.top_k;
    read_int(ctx, x, p, k, 0, "20");
    s.top_k = static_cast<int>(k);
  });
  o.finish();
}

// Registers the campaign-setting keys on `o` (shared by defaults and candidates).
void read_campaign_keys(Ctx& ctx, Obj& o, CampaignSettings& s) {
  o.on("stages", [&](const json& x, const std::string& p) { read_stages(ctx, x, p, s.stages); });
  o.on("cadence", [&](const json& x, const std::string& p) { read_cadence(ctx, x, p, s.cadence); });
  o.on("limits", [&](const json& x, const std::string& p) { read_limits(ctx, x, p, s.limits); });
  o.on("gate", [&](const json& x, const std::string& p) { read_gate(ctx, x, p, s.gate); });
  o.on("judge", [&](const json& x, const std::string& p) { read_judge(ctx, x, p, s.judge); });
  o.on("soak", [&](const json& x, const std::string& p) { read_soak(ctx, x, p, s.soak); });
  o.on("guard", [&](const json& x, const std::string& p) { read_guard(ctx, x, p, s.guard); });
  o.on("sampling", [&](const json& x, const std::string& p) { read_sampling(ctx, x, p, s.sampling); });
  o.on("long_context_sizes", [&](const json& x, const std::string& p) {
    read_positive_list(ctx, x, p, s.long_context_sizes, "[1024, 8192, 32768]");
  });
  o.on("burst_sizes", [&](const json& x, const std::string& p) {
    read_positive_list(ctx, x, p, s.burst_sizes, "[1, 2, 4, 8]");
  });
}

// ---- URLs ----
struct Url {
  std::string scheme, host;
  bool ok = false;
};

Url split_url(const std::string& s) {
  Url u;
  auto pos = s.find("://");
  if (pos == std::string::npos) return u;
  u.scheme = s.substr(0, pos);
  std::string rest = s.substr(pos + 3);
  std::string authority = rest.substr(0, rest.find('/'));
  if (authority.empty() || authority.find('@') != std::string::npos) return u;  // no user:pass@
  std::string port;
  bool has_port = false;
  if (authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) return u;
    u.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return u;
      port = after.substr(1);
      has_port = true;
    }
  } else {
    auto colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (u.host.empty()) return u;
  if (has_port) {
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return u;
    int n = std::stoi(port);
    if (n < 1 || n > 65535) return u;
  }
  u.ok = true;
  return u;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  return host.rfind("127.", 0) == 0;
}

void read_build(Ctx& ctx, const json& v, const std::string& path, BuildSpec& b) {
  static const std::string kExample = "{\"from\": \"http\"} or {\"command\": [\"llama-server\", \"--version\"]} or {\"fixed\": \"b9430\"}";
  Obj o(ctx, v, path);
  if (!o.is_object(kExample)) return;
  int forms = 0;
  o.on("from", [&](const json& x, const std::string& p) {
    ++forms;
    if (!x.is_string() || x.get<std::string>() != "http")
      ctx.err(p, "the only value is \"http\" (read the build from the runtime's HTTP API)", "\"http\"");
    b.source = BuildSource::Http;
  });
  o.on("command", [&](const json& x, const std::string& p) {
    ++forms;
    b.source = BuildSource::Command;
    if (!x.is_array() || x.empty()) {
      ctx.err(p, "must be a non-empty array of strings (argv, run without a shell)", "[\"llama-server\", \"--version\"]");
      return;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i].is_string() || x[i].get<std::string>().empty()) {
        ctx.err(p + "[" + std::to_string(i) + "]", "must be a non-empty string", "\"--version\"");
        return;
      }
      b.command.push_back(x[i].get<std::string>());
    }
  });
  o.on("fixed", [&](const json& x, const std::string& p) {
    ++forms;
    b.source = BuildSource::Fixed;
    read_string(ctx, x, p, b.fixed, "\"b9430\"");
  });
  o.finish();
  if (forms != 1) ctx.err(path, "give exactly one of \"from\", \"command\" or \"fixed\"", kExample);
}

void read_candidate(Ctx& ctx, const json& v, const std::string& path, CandidateConfig& c,
                    const CampaignSettings& defaults) {
  c.settings = defaults;
  Obj o(ctx, v, path);
  if (!o.is_object("{\"name\": \"qwen35b-llama\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": \"llama.cpp\", \"base_url\": \"http://127.0.0.1:8080\"}"))
    return;
  o.on("name", [&](const json& x, const std::string& p) {
    read_string(ctx, x, p, c.name, "\"qwen35b-llama\"");
    for (char ch : c.name) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
        ctx.err(p, "may only hold letters, digits, '-', '_' and '.'", "\"qwen35b-llama\"");
        break;
      }
    }
  });
  o.on("model", [&](const json& x, const std::string& p) { read_string(ctx, x, p, c.model, "\"qwen3.6-35b-a3b\""); });
  o.on("runtime", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"llama.cpp\"");
    if (s.empty()) return;
    auto k = parse_runtime_kind(s);
    if (!k) ctx.err(p, "unknown runtime \"" + s + "\"; one of: " + runtime_kind_names(), "\"llama.cpp\"");
    else c.runtime = *k;
  });
  o.on("base_url", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"http://127.0.0.1:8080\"");
    if (s.empty()) return;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    Url u = split_url(s);
    if (!u.ok || (u.scheme != "http" && u.scheme != "https")) {
      ctx.err(p, "must be an http:// or https:// URL with a host (no user:password@)", "\"http://127.0.0.1:8080\"");
      return;
    }
    if (s.size() >= 3 && s.compare(s.size() - 3, 3, "/v1") == 0) {
      ctx.err(p, "is the server root; drop the trailing /v1 (soakd adds the API paths)", "\"http://127.0.0.1:8080\"");
      return;
    }
    c.base_url = s;
  });
  o.on("build", [&](const json& x, const std::string& p) { read_build(ctx, x, p, c.build); });
  o.on("baseline", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"qwen35b-llama-b9430\"");
    if (!s.empty()) c.baseline = s;
  });
  o.on("api_key_env", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"SOAKD_API_KEY\"");
    if (s.empty()) return;
    bool valid = std::all_of(s.begin(), s.end(), [](char ch) {
      return std::isupper(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
    }) && !std::isdigit(static_cast<unsigned char>(s[0]));
    if (!valid) {
      ctx.err(p, "is the NAME of an environment variable holding the key (A-Z, 0-9, _), never the key itself",
              "\"SOAKD_API_KEY\"");
      return;
    }
    c.api_key_env = s;
  });
  o.on("allow_insecure_api_key", [&](const json& x, const std::string& p) {
    bool b = false;
    read_bool(ctx, x, p, b);
    c.api_key_transport = b ? ApiKeyTransport::AllowInsecure : ApiKeyTransport::RequireSecure;
  });
  o.on("pid", [&](const json& x, const std::string& p) {
    int64_t pid = 0;
    read_int(ctx, x, p, pid, 1, "4242");
    if (pid > 0) c.pid = static_cast<int>(pid);
  });
  o.on("process_name", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"llama-server\"");
    if (!s.empty()) c.process_name = s;
  });
  o.on("slots", [&](const json& x, const std::string& p) {
    int64_t n = 0;
    read_int(ctx, x, p, n, 1, "2");
    if (n > 0) c.slots = static_cast<int>(n);
  });
  o.on("enabled", [&](const json& x, const std::string& p) { read_bool(ctx, x, p, c.enabled); });
  read_campaign_keys(ctx, o, c.settings);
  o.finish();

  for (const char* key : {"name", "model", "runtime", "base_url"}) {
    if (!o.has(key)) {
      static const std::map<std::string, std::string> kEx = {
          {"name", "\"name\": \"qwen35b-llama\""},
          {"model", "\"model\": \"qwen3.6-35b-a3b\""},
          {"runtime", "\"runtime\": \"llama.cpp\""},
          {"base_url", "\"base_url\": \"http://127.0.0.1:8080\""}};
      ctx.err(join_path(path, key), "is required", kEx.at(key));
    }
  }
}

void check_campaign(Ctx& ctx, const std::string& path, const CampaignSettings& s) {
  if (s.limits.stall_timeout_ms > s.limits.wall_timeout_ms)
    ctx.err(join_path(path, "limits.stall_timeout"), "must not exceed limits.wall_timeout (" +
                format_duration(s.limits.wall_timeout_ms) + ")", "\"2m\"");
}

}  // namespace

// ============================================================== Config
const CandidateConfig* Config::find(std::string_view name) const {
  for (const auto& c : candidates)
    if (c.name == name) return &c;
  return nullptr;
}

static nlohmann::ordered_json settings_json(const CampaignSettings& s) {
  nlohmann::ordered_json j;
  j["stages"] = {s.stages.smoke_ms, s.stages.canary_ms, s.stages.gate_ms, s.stages.soak_ms, s.stages.grace_fraction};
  const auto& c = s.cadence;
  j["cadence"] = {c.functional_ms, c.long_context_ms, c.burst_ms, c.cancel_ms, c.scrape_ms, c.gate_pause_ms,
                  c.soak_traffic_ms, c.soak_heavy_ms, c.build_poll_ms};
  j["limits"] = {s.limits.wall_timeout_ms, s.limits.stall_timeout_ms, s.limits.connect_timeout_ms,
                 s.limits.max_response_bytes};
  j["gate"] = {s.gate.min_completed, s.gate.max_failure_ratio, s.gate.min_coverage};
  const auto& r = s.judge;
  j["judge"] = {r.alpha, r.effect_floor, r.hold_band, r.tail_tolerance, r.min_samples, r.max_invalid_ratio, r.repeated_5xx};
  j["soak"] = {s.soak.max_footprint_growth, s.soak.max_footprint_slope_mb_per_h, s.soak.max_decode_drift};
  j["guard"] = {s.guard.swap_growth_bytes, s.guard.swapouts_growth, s.guard.window_ms, s.guard.pressure_critical_trips};
  j["long_context_sizes"] = s.long_context_sizes;
  j["burst_sizes"] = s.burst_sizes;
  j["sampling"] = s.sampling.to_json();
  return j;
}

std::string Config::candidate_hash(const CandidateConfig& c) const {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["model"] = c.model;
  j["runtime"] = to_string(c.runtime);
  j["base_url"] = c.base_url;
  j["baseline"] = c.baseline.value_or("");
  j["slots"] = c.slots.value_or(0);
  j["settings"] = settings_json(c.settings);
  return hash_hex(j.dump());
}

Result<Config> parse_config(const std::string& text, const std::string& source_name,
                            const std::string& base_dir) {
  Ctx ctx{source_name, {}};
  json root;
  try {
    root = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // nlohmann reports "at line L, column C"; keep its wording, it names the spot.
    std::string what = e.what();
    auto pos = what.find("parse error");
    return make_error(source_name + ": not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }

  Config cfg;
  cfg.source_path = source_name;
  auto resolve = [&](const std::string& p) {
    std::string e = expand_home(p);
    if (!e.empty() && e[0] != '/' && !base_dir.empty()) e = (fs::path(base_dir) / e).lexically_normal().string();
    return e;
  };
  cfg.store_path = default_store_path();
  cfg.log_path = default_log_path();

  Obj top(ctx, root, "");
  if (!top.is_object("{\"candidates\": [ ... ]}")) return make_error(ctx.errors.front());
  top.on("store", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"~/Library/Application Support/soakd/soakd.db\"");
    if (!s.empty()) cfg.store_path = resolve(s);
  });
  top.on("log", [&](const json& x, const std::string& p) {
    std::string s;
    read_string(ctx, x, p, s, "\"~/Library/Logs/soakd/soakd.log\"");
    if (!s.empty()) cfg.log_path = resolve(s);
  });
  top.on("defaults", [&](const json& x, const std::string& p) {
    Obj o(ctx, x, p);
    if (!o.is_object("{\"stages\": {\"canary\": \"2h\"}}")) return;
    read_campaign_keys(ctx, o, cfg.defaults);
    o.finish();
    check_campaign(ctx, p, cfg.defaults);
  });
  top.on("sampler", [&](const json& x, const std::string& p) {
    Obj o(ctx, x, p);
    if (!o.is_object("{\"interval\": \"5s\", \"keep_awake\": true}")) return;
    o.on("interval", [&](const json& v, const std::string& q) { read_duration(ctx, v, q, cfg.sampler.interval_ms, "\"5s\""); });
    o.on("keep_awake", [&](const json& v, const std::string& q) { read_bool(ctx, v, q, cfg.sampler.keep_awake); });
    o.finish();
  });
  top.on("schedule", [&](const json& x, const std::string& p) {
    Obj o(ctx, x, p);
    if (!o.is_object("{\"nightly_window\": \"02:00\"}")) return;
    o.on("nightly_window", [&](const json& v, const std::string& q) {
      std::string s;
      read_string(ctx, v, q, s, "\"02:00\" or \"now\"");
      if (s.empty()) return;
      bool ok = s == "now";
      if (!ok && s.size() == 5 && s[2] == ':' && std::isdigit((unsigned char)s[0]) && std::isdigit((unsigned char)s[1]) &&
          std::isdigit((unsigned char)s[3]) && std::isdigit((unsigned char)s[4])) {
        int h = std::stoi(s.substr(0, 2)), m = std::stoi(s.substr(3, 2));
        ok = h < 24 && m < 60;
      }
      if (!ok) ctx.err(q, "must be a local time \"HH:MM\" or \"now\"", "\"02:00\"");
      else cfg.schedule.nightly_window = s;
    });
    o.on("exclusive_heavy", [&](const json& v, const std::string& q) { read_bool(ctx, v, q, cfg.schedule.exclusive_heavy); });
    o.on("max_concurrent_canaries", [&](const json& v, const std::string& q) {
      int64_t n = cfg.schedule.max_concurrent_canaries;
      read_int(ctx, v, q, n, 1, "1");
      cfg.schedule.max_concurrent_canaries = static_cast<int>(n);
    });
    o.finish();
  });
  // Candidates are read after defaults so each starts from the merged defaults,
  // whatever the key order in the file.
  top.on("candidates", [](const json&, const std::string&) {});
  top.finish();

  if (!root.contains("candidates")) {
    ctx.err("candidates", "is required: list the runtimes to test",
            "\"candidates\": [{\"name\": \"qwen35b-llama\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": \"llama.cpp\", \"base_url\": \"http://127.0.0.1:8080\"}]");
  } else if (!root["candidates"].is_array()) {
    ctx.err("candidates", std::string("must be an array, not ") + json_type_name(root["candidates"]), "[{...}, {...}]");
  } else {
    const auto& arr = root["candidates"];
    for (size_t i = 0; i < arr.size(); ++i) {
      CandidateConfig c;
      std::string path = "candidates[" + std::to_string(i) + "]";
      read_candidate(ctx, arr[i], path, c, cfg.defaults);
      check_campaign(ctx, path, c.settings);
      cfg.candidates.push_back(std::move(c));
    }
  }

  // Cross-candidate checks.
  std::set<std::string> names;
  for (size_t i = 0; i < cfg.candidates.size(); ++i) {
    const auto& c = cfg.candidates[i];
    std::string path = "candidates[" + std::to_string(i) + "]";
    if (!c.name.empty() && !names.insert(c.name).second)
      ctx.err(path + ".name", "duplicate candidate name \"" + c.name + "\"; names must be unique",
              "\"" + c.name + "-2\"");
  }
  for (size_t i = 0; i < cfg.candidates.size(); ++i) {
    const auto& c = cfg.candidates[i];
    std::string path = "candidates[" + std::to_string(i) + "]";
    if (c.baseline) {
      if (*c.baseline == c.name)
        ctx.err(path + ".baseline", "a candidate cannot be its own baseline", "the name of another candidate");
      else if (!names.count(*c.baseline)) {
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        ctx.err(path + ".baseline", "names no candidate: \"" + *c.baseline + "\" (candidates: " + known + ")",
                "\"" + (names.empty() ? std::string("other-candidate") : *names.begin()) + "\"");
      }
    }
    if (c.api_key_env && !c.base_url.empty() && c.api_key_transport == ApiKeyTransport::RequireSecure) {
      Url u = split_url(c.base_url);
      if (u.scheme == "http" && !is_loopback_host(u.host))
        ctx.err(path + ".api_key_env",
                "the API key would be sent over plain HTTP to " + u.host +
                    "; use https://, a loopback address, or set \"allow_insecure_api_key\": true",
                "\"base_url\": \"https://" + u.host + "\"");
    }
  }

  if (!ctx.errors.empty()) {
    std::string msg;
    for (const auto& e : ctx.errors) msg += (msg.empty() ? "" : "\n") + e;
    return make_error(msg);
  }
  return cfg;
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read config file: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  return parse_config(ss.str(), path, dir);
}

}  // namespace soak
