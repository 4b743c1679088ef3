#include "core/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/config_schema.h"
#include "core/hash.h"

namespace soak {

using json = nlohmann::json;
namespace fs = std::filesystem;

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

// ============================================================== Config
const CandidateConfig* Config::find(std::string_view name) const {
  for (const auto& c : candidates)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<CapacityEntry> capacity_entries(const CampaignSettings& s, std::optional<int> slots) {
  if (s.capacity) return *s.capacity;
  if (slots && *slots > 1) return {CapacityEntry{kDefaultCapacitySize, *slots}};
  return {};
}

static nlohmann::ordered_json settings_json(const CampaignSettings& s) {
  nlohmann::ordered_json j;
  j["stages"] = {s.stages.smoke_ms, s.stages.canary_ms, s.stages.gate_ms, s.stages.soak_ms, s.stages.grace_fraction};
  const auto& c = s.cadence;
  j["cadence"] = {c.functional_ms, c.long_context_ms, c.burst_ms,      c.cancel_ms,    c.scrape_ms,
                  c.gate_pause_ms, c.soak_traffic_ms, c.soak_heavy_ms, c.build_poll_ms};
  j["limits"] = {s.limits.wall_timeout_ms, s.limits.stall_timeout_ms, s.limits.connect_timeout_ms,
                 s.limits.max_response_bytes, s.limits.prefill_floor_tps};
  if (s.limits.unserved_timeout_ms != Limits{}.unserved_timeout_ms)
    j["limits"].push_back(s.limits.unserved_timeout_ms);  // earlier hashes stay
  j["gate"] = {s.gate.min_completed, s.gate.max_failure_ratio, s.gate.min_coverage};
  const auto& r = s.judge;
  j["judge"] = {r.alpha,       r.effect_floor,      r.hold_band,    r.tail_tolerance,
                r.min_samples, r.max_invalid_ratio, r.repeated_5xx, r.max_failure_ratio};
  if (r.min_effect_ms != JudgeRules{}.min_effect_ms) j["judge"].push_back(r.min_effect_ms);  // earlier hashes stay
  if (r.self_factor != JudgeRules{}.self_factor) j["judge"].push_back(r.self_factor);        // likewise
  if (r.serial_min_share != JudgeRules{}.serial_min_share ||
      r.serial_min_effect_ms != JudgeRules{}.serial_min_effect_ms)  // absent when defaulted: earlier hashes stay
    j["judge_serial"] = {r.serial_min_share, r.serial_min_effect_ms};
  j["soak"] = {s.soak.max_footprint_growth, s.soak.max_footprint_slope_mb_per_h, s.soak.max_decode_drift};
  j["guard"] = {s.guard.swap_growth_bytes, s.guard.swapouts_growth, s.guard.window_ms, s.guard.pressure_critical_trips};
  j["long_context_sizes"] = s.long_context_sizes;
  j["burst_sizes"] = s.burst_sizes;
  if (s.capacity) {  // absent when defaulted: earlier hashes stay
    auto& cap = j["capacity"] = nlohmann::ordered_json::array();
    for (const auto& e : *s.capacity) cap.push_back({e.size, e.concurrency});
  }
  j["sampling"] = s.sampling.to_json();
  if (s.agent != AgentSettings{}) {  // absent when defaulted: earlier hashes stay
    const auto& a = s.agent;
    j["agent"] = {a.context_ceiling_tokens, a.band_tokens, a.thinking_share,
                  a.preserve_thinking,      a.tool_every,  a.min_recovery_ratio};
  }
  // Absent when defaulted: earlier hashes stay.
  if (s.limits.min_server_cap != kDefaultMinServerCap) j["min_server_cap"] = s.limits.min_server_cap;
  if (s.slo != SloSettings{}) {
    const auto& f = s.slo;
    auto points = [](const std::vector<SloPoint>& ps) {
      auto a = nlohmann::ordered_json::array();
      for (const auto& p : ps) a.push_back({p.size, p.max_ms});
      return a;
    };
    j["slo"] = {f.min_decode_tps,   points(f.max_ttft), f.max_short_wall_ms, points(f.max_turn_wall),
                f.max_warm_ttft_ms, f.min_breaches,     f.max_breach_share};
  }
  if (s.equivalence != EquivalenceSettings{}) {  // absent when defaulted: earlier hashes stay
    const auto& e = s.equivalence;
    j["equivalence"] = {e.enabled == EquivalenceSwitch::On, e.max_fork_margin, e.kl_factor, e.min_kl};
  }
  return j;
}

std::string Config::candidate_hash(const CandidateConfig& c) const {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["model"] = c.model;
  if (c.kind != WorkloadKind::Chat) j["kind"] = to_string(c.kind);  // absent for chat: earlier hashes stay
  j["runtime"] = to_string(c.runtime);
  j["base_url"] = c.base_url;
  j["baseline"] = c.baseline.value_or("");
  j["slots"] = c.slots.value_or(0);
  if (c.allow_coexisting) j["allow_coexisting"] = true;    // absent when off: earlier hashes stay
  if (c.accept_server_cap) j["accept_server_cap"] = true;  // likewise
  if (c.ab != AbMode::History) j["ab"] = to_string(c.ab);  // likewise
  j["settings"] = settings_json(c.settings);
  // Added only when set, so a candidate without them keeps the hash it always had.
  if (c.memory_budget_bytes) j["memory_budget_bytes"] = *c.memory_budget_bytes;
  if (c.launch) {
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const auto& [k, v] : c.launch->env) env[k] = v.from_env.empty() ? v.text : "${" + v.from_env + "}";
    j["launch"] = {{"argv", display_argv(*c.launch)},
                   {"env", env},
                   {"cwd", c.launch->cwd},
                   {"ready_timeout_ms", c.launch->ready_timeout_ms},
                   {"stop_timeout_ms", c.launch->stop_timeout_ms},
                   {"keep_running", c.launch->keep_running == KeepRunning::Yes}};
  }
  return hash_hex(j.dump());
}

// ============================================================== cross-candidate rules
namespace {

// Rules that need every candidate read: unique names, baselines that name
// another candidate, no API key sent in the clear to another host.
void check_candidates(schema::ReadContext& ctx, const Config& cfg) {
  std::set<std::string> names;
  for (size_t i = 0; i < cfg.candidates.size(); ++i) {
    const auto& c = cfg.candidates[i];
    if (!c.name.empty() && !names.insert(c.name).second)
      ctx.err(schema::index_path("candidates", i) + ".name",
              "duplicate candidate name \"" + c.name + "\"; names must be unique", "\"" + c.name + "-2\"");
  }
  for (size_t i = 0; i < cfg.candidates.size(); ++i) {
    const auto& c = cfg.candidates[i];
    std::string path = schema::index_path("candidates", i);
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
      schema::Url u = schema::split_url(c.base_url);
      if (u.scheme == "http" && !schema::is_loopback_host(u.host))
        ctx.err(path + ".api_key_env",
                "the API key would be sent over plain HTTP to " + u.host +
                    "; use https://, a loopback address, or set \"allow_insecure_api_key\": true",
                "\"base_url\": \"https://" + u.host + "\"");
    }
  }
}

}  // namespace

Result<Config> parse_config(const std::string& text, const std::string& source_name, const std::string& base_dir) {
  json root;
  try {
    root = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // nlohmann reports "at line L, column C"; keep its wording, it names the spot.
    std::string what = e.what();
    auto pos = what.find("parse error");
    return make_error(source_name + ": not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }

  schema::ReadContext ctx{source_name, base_dir, {}};
  Config cfg;
  cfg.source_path = source_name;
  cfg.store_path = default_store_path();
  cfg.log_path = default_log_path();
  if (!schema::read_section(ctx, root, "", schema::top_section(), cfg)) return make_error(ctx.errors.front());

  // Candidates are read after defaults so each starts from the merged defaults,
  // whatever the key order in the file.
  if (!root.contains("candidates")) {
    ctx.err("candidates", "is required: list the runtimes to test",
            "\"candidates\": [{\"name\": \"qwen35b-llama\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": "
            "\"llama.cpp\", \"base_url\": \"http://127.0.0.1:8080\"}]");
  } else if (!root["candidates"].is_array()) {
    ctx.err("candidates", std::string("must be an array, not ") + schema::json_type_name(root["candidates"]),
            "[{...}, {...}]");
  } else if (root["candidates"].empty()) {
    ctx.err("candidates", "is empty: soakd has nothing to test; list at least one runtime",
            "\"candidates\": [{\"name\": \"qwen35b-llama\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": "
            "\"llama.cpp\", \"base_url\": \"http://127.0.0.1:8080\"}]");
  } else {
    const auto& arr = root["candidates"];
    for (size_t i = 0; i < arr.size(); ++i) {
      CandidateConfig c;
      c.settings = cfg.defaults;
      std::string path = schema::index_path("candidates", i);
      schema::read_section(ctx, arr[i], path, schema::candidate_section(), c);
      schema::check_campaign(ctx, path, c.settings);
      schema::check_capacity_budget(ctx, path, c.settings, c.slots);
      schema::check_launch(ctx, path, c);
      cfg.candidates.push_back(std::move(c));
    }
  }
  check_candidates(ctx, cfg);

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
