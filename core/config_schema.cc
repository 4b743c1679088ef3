#include "core/config_schema.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

namespace soak::schema {

namespace {

inline constexpr int64_t kMaxCapacityConcurrency = 256;  // each is a connection (a file descriptor)
inline constexpr int64_t kBytesPerMb = 1000 * 1000;      // guard.swap_growth_mb, as docs/DESIGN.md §2.10 counts it

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// ---- custom readers of the candidate's own keys
void read_name(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  c.name = *s;
  bool ok = std::all_of(s->begin(), s->end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
  if (!ok) ctx.err(p, "may only hold letters, digits, '-', '_' and '.'", ex);
}

void read_runtime(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  auto k = parse_runtime_kind(*s);
  if (!k)
    ctx.err(p, "unknown runtime \"" + *s + "\"; one of: " + runtime_kind_names(), ex);
  else
    c.runtime = *k;
}

void read_kind(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  auto k = parse_workload_kind(*s);
  if (!k)
    ctx.err(p, "unknown kind \"" + *s + "\"; one of: " + workload_kind_names(), ex);
  else
    c.kind = *k;
}

void read_base_url(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  while (s->size() > 1 && s->back() == '/') s->pop_back();
  Url u = split_url(*s);
  if (!u.ok || (u.scheme != "http" && u.scheme != "https")) {
    ctx.err(p, "must be an http:// or https:// URL with a host (no user:password@)", ex);
    return;
  }
  if (s->size() >= 3 && s->compare(s->size() - 3, 3, "/v1") == 0) {
    ctx.err(p, "is the server root; drop the trailing /v1 (soakd adds the API paths)", ex);
    return;
  }
  c.base_url = *s;
}

void read_build(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  if (!read_section(ctx, v, p, build_section(), c.build)) return;
  int forms = 0;
  for (const char* key : {"from", "command", "fixed"}) forms += v.contains(key) ? 1 : 0;
  if (forms != 1) ctx.err(p, "give exactly one of \"from\", \"command\" or \"fixed\"", ex);
}

void read_api_key_env(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex,
                      CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  bool valid =
      std::all_of(s->begin(), s->end(),
                  [](char ch) { return std::isupper(static_cast<unsigned char>(ch)) || is_digit(ch) || ch == '_'; }) &&
      !is_digit((*s)[0]);
  // The message never repeats the value: it may be the key itself.
  if (!valid) {
    ctx.err(p, "is the NAME of an environment variable holding the key (A-Z, 0-9, _), never the key itself", ex);
    return;
  }
  c.api_key_env = *s;
}

void read_nightly_window(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex,
                         ScheduleSettings& s) {
  auto w = read_string(ctx, v, p, ex);
  if (!w) return;
  bool ok = *w == "now";
  if (!ok && w->size() == 5 && (*w)[2] == ':' && is_digit((*w)[0]) && is_digit((*w)[1]) && is_digit((*w)[3]) &&
      is_digit((*w)[4])) {
    int h = std::stoi(w->substr(0, 2)), m = std::stoi(w->substr(3, 2));
    ok = h < 24 && m < 60;
  }
  if (!ok)
    ctx.err(p, "must be a local time \"HH:MM\" or \"now\"", "\"02:00\"");
  else
    s.nightly_window = *w;
}

void read_allow_insecure_api_key(ReadContext& ctx, const json& v, const std::string& p, const std::string&,
                                 CandidateConfig& c) {
  bool allow = false;
  if (read_bool(ctx, v, p, allow))
    c.api_key_transport = allow ? ApiKeyTransport::AllowInsecure : ApiKeyTransport::RequireSecure;
}

void read_metrics_textfile(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex,
                           MetricsSettings& m) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  // node_exporter's textfile collector reads *.prom files only: any other name
  // would be written and never collected.
  if (s->size() < 6 || s->compare(s->size() - 5, 5, ".prom") != 0) {
    ctx.err(p, "must name a file ending in .prom (node_exporter's textfile collector reads only those)", ex);
    return;
  }
  m.textfile = resolve_path(ctx, *s);
}

// ---- capacity: [{"size": 32768, "concurrency": 8}, ...]
void read_capacity(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CampaignSettings& s) {
  if (!v.is_array()) {
    ctx.err(p, "must be an array of {\"size\", \"concurrency\"} objects (empty: no capacity check)", ex);
    return;
  }
  std::vector<CapacityEntry> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = index_path(p, i);
    const json& e = v[i];
    if (!expect_object(ctx, e, at, "{\"size\": 32768, \"concurrency\": 8}")) return;
    for (const auto& [key, value] : e.items()) {
      (void)value;
      if (key != "size" && key != "concurrency") {
        ctx.err(join_path(at, key), "unknown key \"" + key + "\"; allowed here: size, concurrency", "\"size\": 32768");
        return;
      }
    }
    CapacityEntry c;
    const json* size = e.contains("size") ? &e.at("size") : nullptr;
    const json* conc = e.contains("concurrency") ? &e.at("concurrency") : nullptr;
    if (!size || !size->is_number_integer() || size->get<int64_t>() <= 0) {
      ctx.err(join_path(at, "size"), "must be a positive number of prompt tokens", "32768");
      return;
    }
    if (!conc || !conc->is_number_integer() || conc->get<int64_t>() < 1 ||
        conc->get<int64_t>() > kMaxCapacityConcurrency) {
      ctx.err(
          join_path(at, "concurrency"),
          "must be an integer from 1 to " + std::to_string(kMaxCapacityConcurrency) + " (prompts in flight at once)",
          "8");
      return;
    }
    c.size = size->get<int64_t>();
    c.concurrency = static_cast<int>(conc->get<int64_t>());
    out.push_back(c);
  }
  s.capacity = std::move(out);
}

// ---- build: exactly one of three forms (counted by read_build)
void read_build_from(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, BuildSpec& b) {
  if (!v.is_string() || v.get<std::string>() != "http")
    ctx.err(p, "the only value is \"http\" (read the build from the runtime's HTTP API)", ex);
  b.source = BuildSource::Http;
}

void read_build_command(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, BuildSpec& b) {
  b.source = BuildSource::Command;
  if (!v.is_array() || v.empty()) {
    ctx.err(p, "must be a non-empty array of strings (argv, run without a shell)", ex);
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty()) {
      ctx.err(index_path(p, i), "must be a non-empty string", "\"--version\"");
      return;
    }
    b.command.push_back(v[i].get<std::string>());
  }
}

void read_build_fixed(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, BuildSpec& b) {
  b.source = BuildSource::Fixed;
  if (auto s = read_string(ctx, v, p, ex)) b.fixed = *s;
}

// ---- top level
void read_store(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, Config& cfg) {
  if (auto s = read_string(ctx, v, p, ex)) cfg.store_path = resolve_path(ctx, *s);
}

void read_log(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, Config& cfg) {
  if (auto s = read_string(ctx, v, p, ex)) cfg.log_path = resolve_path(ctx, *s);
}

// Cross-key rules run on the defaults as read; each candidate is checked again
// after its overrides (parse_config).
void read_defaults(ReadContext& ctx, const json& v, const std::string& p, const std::string&, Config& cfg) {
  if (read_section(ctx, v, p, campaign_section(), cfg.defaults)) check_campaign(ctx, p, cfg.defaults);
}

}  // namespace

std::string resolve_path(const ReadContext& ctx, const std::string& p) {
  std::string e = expand_home(p);
  if (!e.empty() && e[0] != '/' && !ctx.base_dir.empty())
    e = (std::filesystem::path(ctx.base_dir) / e).lexically_normal().string();
  return e;
}

// ============================================================== campaign settings
const Section<StageDurations>& stages_section() {
  using S = StageDurations;
  static const Section<S> s{"{\"canary\": \"2h\", \"gate\": \"24h\"}",
                            {
                                duration("smoke", &S::smoke_ms, "\"15m\""),
                                duration("canary", &S::canary_ms, "\"2h\""),
                                duration("gate", &S::gate_ms, "\"24h\""),
                                duration("soak", &S::soak_ms, "\"7d\""),
                                number("grace", &S::grace_fraction, 0, 10,
                                       "0.25 (a stage may run 25% past its length to make up gaps, held heavy work or "
                                       "a decisive rule's evidence)"),
                            }};
  return s;
}

const Section<Cadences>& cadence_section() {
  using S = Cadences;
  static const Section<S> s{"{\"functional\": \"10m\", \"burst\": \"30m\"}",
                            {
                                duration("functional", &S::functional_ms, "\"10m\""),
                                duration("long_context", &S::long_context_ms, "\"1h\""),
                                duration("burst", &S::burst_ms, "\"30m\""),
                                duration("cancel", &S::cancel_ms, "\"30m\""),
                                duration("scrape", &S::scrape_ms, "\"1m\""),
                                duration("gate_pause", &S::gate_pause_ms, "\"2s\"", Zero::Allow),
                                duration("soak_traffic", &S::soak_traffic_ms, "\"1m\""),
                                duration("soak_heavy", &S::soak_heavy_ms, "\"6h\""),
                                duration("gate_long_context", &S::gate_long_context_ms, "\"4h\""),
                                duration("build_poll", &S::build_poll_ms, "\"5m\""),
                            }};
  return s;
}

const Section<Limits>& limits_section() {
  using S = Limits;
  static const Section<S> s{"{\"wall_timeout\": \"30m\", \"stall_timeout\": \"2m\"}",
                            {
                                duration("wall_timeout", &S::wall_timeout_ms, "\"30m\""),
                                duration("stall_timeout", &S::stall_timeout_ms, "\"2m\""),
                                duration("connect_timeout", &S::connect_timeout_ms, "\"10s\""),
                                integer("max_response_bytes", &S::max_response_bytes, 1024, "8388608"),
                                number("prefill_floor_tps", &S::prefill_floor_tps, 1, 1e7,
                                       "100 (prompt tokens/s; the prefill allowance is tokens / this)"),
                                integer("min_server_cap", &S::min_server_cap, 1, "8192 (tokens)"),
                                duration("unserved_timeout", &S::unserved_timeout_ms, "\"5m\""),
                            }};
  return s;
}

const Section<GateRules>& gate_section() {
  using S = GateRules;
  static const Section<S> s{"{\"min_completed\": 1000}",
                            {
                                integer("min_completed", &S::min_completed, 1, "1000"),
                                number("max_failure_ratio", &S::max_failure_ratio, 0, 1, "0.01"),
                                number("min_coverage", &S::min_coverage, 0, 1, "0.9"),
                            }};
  return s;
}

const Section<JudgeRules>& judge_section() {
  using S = JudgeRules;
  static const Section<S> s{"{\"alpha\": 0.01, \"effect_floor\": 0.1}",
                            {
                                number("alpha", &S::alpha, 1e-9, 0.5, "0.01"),
                                number("effect_floor", &S::effect_floor, 0, 10, "0.1"),
                                number("hold_band", &S::hold_band, 0, 10, "0.05"),
                                integer("min_effect_ms", &S::min_effect_ms, 0, "10"),
                                number("tail_tolerance", &S::tail_tolerance, 0, 100, "0.25"),
                                integer("min_samples", &S::min_samples, 2, "5"),
                                number("max_invalid_ratio", &S::max_invalid_ratio, 0, 1, "0.05"),
                                integer("repeated_5xx", &S::repeated_5xx, 1, "3"),
                                number("max_failure_ratio", &S::max_failure_ratio, 0, 1, "0.01"),
                                number("few_sample_factor", &S::few_sample_factor, 1.5, 1000,
                                       "3 (every candidate sample this many times the baseline's worst)"),
                                number("self_factor", &S::self_factor, 1.1, 1000,
                                       "2 (the gate or soak this many times worse than its own canary)"),
                                number("serial_min_share", &S::serial_min_share, 0.6, 1,
                                       "0.75 (each place in a serialized burst's queue adds at least 0.75 of one "
                                       "answer's service time to the time to first token)"),
                                integer("serial_min_effect_ms", &S::serial_min_effect_ms, 0,
                                        "50 (and at least 50 ms: a smaller rise per place is nothing a user feels)"),
                            }};
  return s;
}

const Section<SoakRules>& soak_section() {
  using S = SoakRules;
  static const Section<S> s{"{\"max_footprint_growth\": 0.1}",
                            {
                                number("max_footprint_growth", &S::max_footprint_growth, 0, 100, "0.1"),
                                number("max_footprint_slope_mb_per_h", &S::max_footprint_slope_mb_per_h, 0, 1e9, "50"),
                                number("max_decode_drift", &S::max_decode_drift, 0, 1, "0.15"),
                            }};
  return s;
}

const Section<AgentSettings>& agent_section() {
  using S = AgentSettings;
  static const Section<S> s{"{\"context_ceiling\": 50000, \"thinking_share\": 0.5}",
                            {
                                integer("context_ceiling", &S::context_ceiling_tokens, 1024, "50000"),
                                integer("band_tokens", &S::band_tokens, 256, "10000"),
                                number("thinking_share", &S::thinking_share, 0, 1, "0.5"),
                                boolean("preserve_thinking", &S::preserve_thinking),
                                integer("tool_every", &S::tool_every, 1, "2"),
                                number("min_recovery_ratio", &S::min_recovery_ratio, 0, 1, "0.5"),
                            }};
  return s;
}

const Section<GuardRules>& guard_section() {
  using S = GuardRules;
  static const Section<S> s{"{\"swap_growth_mb\": 500}",
                            {
                                scaled_integer("swap_growth_mb", &S::swap_growth_bytes, kBytesPerMb, 1, "500"),
                                integer("swapouts_growth", &S::swapouts_growth, 1, "1000"),
                                duration("window", &S::window_ms, "\"10m\""),
                                boolean("pressure_critical_trips", &S::pressure_critical_trips),
                            }};
  return s;
}

const Section<Sampling>& sampling_section() {
  using S = Sampling;
  static const Section<S> s{"{\"temperature\": 0.6, \"top_p\": 0.95, \"top_k\": 20}",
                            {
                                number("temperature", &S::temperature, 0, 2, "0.6"),
                                number("top_p", &S::top_p, 0, 1, "0.95"),
                                integer("top_k", &S::top_k, 0, "20"),
                            }};
  return s;
}

const Section<CampaignSettings>& campaign_section() {
  using S = CampaignSettings;
  static const Section<S> s{
      "{\"stages\": {\"canary\": \"2h\"}}",
      {
          object("stages", &S::stages, stages_section()),
          object("cadence", &S::cadence, cadence_section()),
          object("limits", &S::limits, limits_section()),
          object("gate", &S::gate, gate_section()),
          object("judge", &S::judge, judge_section()),
          object("soak", &S::soak, soak_section()),
          object("guard", &S::guard, guard_section()),
          object("agent", &S::agent, agent_section()),
          object("sampling", &S::sampling, sampling_section()),
          object("slo", &S::slo, slo_section()),
          object("equivalence", &S::equivalence, equivalence_section()),
          positive_list("long_context_sizes", &S::long_context_sizes, "[1024, 8192, 32768]",
                        Bound{kMaxLongContextTokens,
                              "a long-context prompt is built and held in memory for its whole "
                              "request, about 4 bytes per token"}),
          positive_list("burst_sizes", &S::burst_sizes, "[1, 8, 30, 80]",
                        Bound{kMaxBurstSize,
                              "every member of a burst holds its own connection, a file descriptor; "
                              "a launchd job gets 256 by default, shared with the store, the log and "
                              "every other candidate"}),
          custom<S>("capacity", Kind::List, "[{\"size\": 32768, \"concurrency\": 8}]", read_capacity),
      }};
  return s;
}

void check_campaign(ReadContext& ctx, const std::string& path, const CampaignSettings& s) {
  const Limits& l = s.limits;
  if (l.stall_timeout_ms > l.wall_timeout_ms) {
    ctx.err(join_path(path, "limits.stall_timeout"),
            "must not exceed limits.wall_timeout (" + format_duration(l.wall_timeout_ms) + ")", "\"2m\"");
    return;
  }
  // The liveness bound is never shorter than an outstanding request's own
  // silent budget (campaigns/liveness.h): a value set below the stall timeout
  // would never apply, which a reader of the config would not guess.
  if (l.unserved_timeout_ms != kDefaultUnservedTimeoutMs && l.unserved_timeout_ms < l.stall_timeout_ms)
    ctx.err(join_path(path, "limits.unserved_timeout"),
            "is " + format_duration(l.unserved_timeout_ms) + ", shorter than limits.stall_timeout (" +
                format_duration(l.stall_timeout_ms) +
                "): nothing served for less than a stall timeout is not yet a stall, and the liveness bound is "
                "never shorter than a request's own stall budget, so this value would never apply",
            "\"" + format_duration(std::max(l.stall_timeout_ms, kDefaultUnservedTimeoutMs)) + "\"");
  // A prefill budget the wall timeout cuts first is no budget (docs/DESIGN.md §2.2).
  if (s.long_context_sizes.empty()) return;
  const int64_t largest = *std::max_element(s.long_context_sizes.begin(), s.long_context_sizes.end());
  // Whole seconds, rounded up: the figure is shown to the user.
  const int64_t budget_ms =
      (l.stall_timeout_ms + prefill_allowance_ms(largest, l.prefill_floor_tps) + kSecond - 1) / kSecond * kSecond;
  if (budget_ms < l.wall_timeout_ms) return;
  std::ostringstream floor;
  floor << l.prefill_floor_tps;
  ctx.err(join_path(path, "limits.wall_timeout"),
          "is " + format_duration(l.wall_timeout_ms) + ", within the prefill budget of a fresh " +
              std::to_string(largest) + "-token prompt (the largest of long_context_sizes): stall_timeout " +
              format_duration(l.stall_timeout_ms) + " + " + std::to_string(largest) + " tokens / prefill_floor_tps " +
              floor.str() + " = " + format_duration(budget_ms) +
              "; raise wall_timeout above that with time to answer, or raise prefill_floor_tps",
          "\"" + format_duration(budget_ms + 5 * kMinute) + "\"");
}

// ============================================================== candidates
const Section<BuildSpec>& build_section() {
  using S = BuildSpec;
  static const Section<S> s{
      "{\"from\": \"http\"} or {\"command\": [\"llama-server\", \"--version\"]} or {\"fixed\": \"b9430\"}",
      {
          custom<S>("from", Kind::String, "\"http\"", read_build_from),
          custom<S>("command", Kind::List, "[\"llama-server\", \"--version\"]", read_build_command),
          custom<S>("fixed", Kind::String, "\"b9430\"", read_build_fixed),
      }};
  return s;
}

const Section<CandidateConfig>& candidate_section() {
  using S = CandidateConfig;
  static const Section<S> s = [] {
    Section<S> t{
        "{\"name\": \"qwen35b-llama\", \"model\": \"qwen3.6-35b-a3b\", \"runtime\": \"llama.cpp\", "
        "\"base_url\": \"http://127.0.0.1:8080\"}",
        {
            required(custom<S>("name", Kind::String, "\"qwen35b-llama\"", read_name)),
            required(text("model", &S::model, "\"qwen3.6-35b-a3b\"")),
            custom<S>("kind", Kind::String, "\"embedding\"", read_kind),
            required(custom<S>("runtime", Kind::String, "\"llama.cpp\"", read_runtime)),
            required(custom<S>("base_url", Kind::String, "\"http://127.0.0.1:8080\"", read_base_url)),
            custom<S>("build", Kind::Object, build_section().example, read_build),
            text("baseline", &S::baseline, "\"qwen35b-llama-b9430\""),
            custom<S>("api_key_env", Kind::String, "\"SOAKD_API_KEY\"", read_api_key_env),
            custom<S>("allow_insecure_api_key", Kind::Bool, "true", read_allow_insecure_api_key),
            integer("pid", &S::pid, 1, "4242"),
            text("process_name", &S::process_name, "\"llama-server\""),
            integer("slots", &S::slots, 1, "2"),
            boolean("enabled", &S::enabled),
            custom<S>("launch", Kind::Object, launch_section().example, read_launch),
            custom<S>("memory_budget", Kind::String, "\"64GiB\"", read_memory_budget),
            boolean("allow_coexisting", &S::allow_coexisting),
            boolean("accept_server_cap", &S::accept_server_cap),
            custom<S>("ab", Kind::String, "\"history\"", read_ab),
        }};
    embed(t.fields, &S::settings, campaign_section());
    return t;
  }();
  return s;
}

// ============================================================== the rest of the file
const Section<SamplerSettings>& sampler_section() {
  using S = SamplerSettings;
  static const Section<S> s{"{\"interval\": \"5s\", \"keep_awake\": true}",
                            {
                                duration("interval", &S::interval_ms, "\"5s\""),
                                duration("process_every", &S::process_every_ms, "\"60s\""),
                                boolean("keep_awake", &S::keep_awake),
                            }};
  return s;
}

const Section<ScheduleSettings>& schedule_section() {
  using S = ScheduleSettings;
  static const Section<S> s{"{\"nightly_window\": \"02:00\"}",
                            {
                                custom<S>("nightly_window", Kind::String, "\"02:00\" or \"now\"", read_nightly_window),
                                boolean("exclusive_heavy", &S::exclusive_heavy),
                                integer("max_concurrent_canaries", &S::max_concurrent_canaries, 1, "1"),
                            }};
  return s;
}

const Section<MetricsSettings>& metrics_section() {
  using S = MetricsSettings;
  static const Section<S> s{
      "{\"textfile\": \"/opt/homebrew/var/node_exporter/textfile/soakd.prom\"}",
      {
          custom<S>("textfile", Kind::String, "\"/opt/homebrew/var/node_exporter/textfile/soakd.prom\"",
                    read_metrics_textfile),
      }};
  return s;
}

const Section<StoreOutageSettings>& store_outage_section() {
  using S = StoreOutageSettings;
  static const Section<S> s{"{\"max_queued_rows\": 10000, \"stop_after\": \"1h\"}",
                            {
                                integer("max_queued_rows", &S::max_queued_rows, 1, "10000"),
                                duration("stop_after", &S::stop_after_ms, "\"1h\""),
                            }};
  return s;
}

const Section<Config>& top_section() {
  using S = Config;
  static const Section<S> s{
      "{\"candidates\": [ ... ]}",
      {
          custom<S>("store", Kind::String, "\"~/Library/Application Support/soakd/soakd.db\"", read_store),
          custom<S>("log", Kind::String, "\"~/Library/Logs/soakd/soakd.log\"", read_log),
          custom<S>("defaults", Kind::Object, campaign_section().example, read_defaults),
          object("sampler", &S::sampler, sampler_section()), object("schedule", &S::schedule, schedule_section()),
          object("store_outage", &S::store_outage, store_outage_section()),
          object("metrics", &S::metrics, metrics_section()), object("notify", &S::notify, notify_section()),
          read_elsewhere<S>("candidates", Kind::List, "[{...}, {...}]"),  // by parse_config, after "defaults"
      }};
  return s;
}

// ============================================================== URLs
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
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit)) return u;
    int n = std::stoi(port);
    if (n < 1 || n > 65535) return u;
    u.port = static_cast<uint16_t>(n);
  } else {
    u.port = u.scheme == "https" ? 443 : 80;
  }
  u.ok = true;
  return u;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  return host.rfind("127.", 0) == 0;
}

}  // namespace soak::schema
