// soakd configuration: one JSON file (// and /* */ comments allowed).
//
// parse_config() validates everything before anything runs: unknown keys are
// errors (a typo must never fall back to a default silently), every error names
// the file, the JSON path (e.g. `candidates[2].base_url`), what is wrong and an
// example of what is right. Durations are strings with units ("90s", "2h", "7d",
// core/duration.h). The keys, their bounds and their examples are tables in
// core/config_schema.cc; the defaults are the initializers below.
//
// Pure: no I/O except load_config(), which reads the file. Thread-agnostic.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/burst_serial.h"
#include "core/duration.h"
#include "core/launch.h"
#include "core/limits.h"
#include "core/result.h"
#include "core/types.h"

namespace soak {

// ---- defaults (docs/DESIGN.md §2, §3; request limits: core/limits.h) -------
inline constexpr int64_t kDefaultSmokeMs = 15 * kMinute;
inline constexpr int64_t kDefaultCanaryMs = 2 * kHour;
inline constexpr int64_t kDefaultGateMs = 24 * kHour;
inline constexpr int64_t kDefaultSoakMs = 7 * kDay;
inline constexpr double kDefaultStageGraceFraction = 0.25;  // gap extension allowed past the nominal length

inline constexpr int64_t kDefaultFunctionalEveryMs = 10 * kMinute;
inline constexpr int64_t kDefaultLongContextEveryMs = 60 * kMinute;
// Six bursts of each size in a 2 h canary: enough runs for the comparison's
// five-sample minimum even at size 1.
inline constexpr int64_t kDefaultBurstEveryMs = 20 * kMinute;
inline constexpr int64_t kDefaultCancelEveryMs = 30 * kMinute;
inline constexpr int64_t kDefaultScrapeEveryMs = kMinute;
inline constexpr int64_t kDefaultGatePauseMs = 2'000;
inline constexpr int64_t kDefaultSoakTrafficEveryMs = kMinute;
inline constexpr int64_t kDefaultSoakHeavyEveryMs = 6 * kHour;  // long context + bursts during the soak
// Long context in the gate: six rounds of every size in 24 h, so each size has
// the comparison's five-sample minimum by the gate's end (docs/DESIGN.md §3.5).
inline constexpr int64_t kDefaultGateLongContextEveryMs = 4 * kHour;
inline constexpr int64_t kDefaultBuildPollMs = 5 * kMinute;
inline constexpr int64_t kDefaultSampleEveryMs = 5'000;
inline constexpr int64_t kProcessSampleIntervals = 12;

inline const std::vector<int64_t> kDefaultLongContextSizes{1024, 8192, 32768, 65536, 100000, 131072};
// S4: agent turns fire 30-80 POSTs within ~200 ms; 8 is the --parallel of the
// field's 35B runs.
inline const std::vector<int> kDefaultBurstSizes{1, 8, 30, 80};

// Concurrent long context (S0/S1: 32K x 8 at --parallel 8; the 27B 32K x 4):
// the default capacity entry is this size times the candidate's slots, when it
// has more than one.
inline constexpr int64_t kDefaultCapacitySize = 32768;
inline constexpr int64_t kMaxBurstSize = 128;                // file descriptors: see the config message
inline constexpr int64_t kMaxLongContextTokens = 1'048'576;  // memory: see the config message

// A launch fingerprint's default output cap below this many tokens holds the
// candidate at smoke (docs/DESIGN.md §3.11): MLX-LM's 512 cuts a real agent's
// long answer (S1:48), and no default probe answers long enough to show it.
inline constexpr int64_t kDefaultMinServerCap = 8192;

// Absolute floors (slo; docs/DESIGN.md §3.11), from the seeds' "too slow to
// use" lines with room below what a healthy Mac Studio does:
//   decode: 2.8 tok/s was discarded as too slow (S1:108, S1:164); the slowest
//     decode of a build kept in the field reports is 8.76 tok/s (S1:115);
//   a short prompt's first token: a warm retry with no first token in 90 s
//     was rejected (S1:106);
//   a short answer's wall: short prose over 180 s was too slow (S1:108);
//   12K: a 12K probe past the 300 s client wait was too slow (S1:117); the
//     slowest completed fresh prefill, a 27B at 65,538 tokens in 494 s, is
//     inside the line extended from it (1,210 s at 65K).
inline constexpr double kDefaultSloMinDecodeTps = 3.0;
inline constexpr int64_t kDefaultSloShortTtftMs = 90 * kSecond;
inline constexpr int64_t kDefaultSloShortWallMs = 180 * kSecond;
inline constexpr int64_t kDefaultSloAt12kMs = 300 * kSecond;
inline constexpr int64_t kSlo12kTokens = 12'288;
inline constexpr int64_t kDefaultSloWarmTtftMs = 90 * kSecond;
// A floor fails on this many breaching rows (every row when it has fewer,
// never one row alone) that are at least this share of its rows.
inline constexpr int kDefaultSloMinBreaches = 3;
inline constexpr double kDefaultSloMaxBreachShare = 0.10;

// ---- sections ---------------------------------------------------------------
// A floor that grows with the prompt: `max_ms` at `size` tokens; between two
// points the floor is interpolated, past the last one it keeps the last
// segment's slope (one point: flat).
struct SloPoint {
  int64_t size = 0;
  int64_t max_ms = 0;
  bool operator==(const SloPoint&) const = default;
};

// The golden-set comparison across builds (docs/DESIGN.md §3.13): a fork
// where either side's top-1 − top-2 margin is above max_fork_margin nats is a
// changed answer, one below it a near tie (recorded, not failed); the mean
// top-k KL before the forks fails above kl_factor × the build's own noise
// floor, and never below min_kl (a bit-stable build's floor is 0).
inline constexpr double kDefaultEquivalenceMaxForkMargin = 0.1;
inline constexpr double kDefaultEquivalenceKlFactor = 2.0;
inline constexpr double kDefaultEquivalenceMinKl = 0.001;
enum class EquivalenceSwitch { On, Off };
struct EquivalenceSettings {
  EquivalenceSwitch enabled = EquivalenceSwitch::On;  // chat candidates only
  double max_fork_margin = kDefaultEquivalenceMaxForkMargin;
  double kl_factor = kDefaultEquivalenceKlFactor;
  double min_kl = kDefaultEquivalenceMinKl;
  bool operator==(const EquivalenceSettings&) const = default;
};

// Absolute floors that apply in every stage, with or without a baseline.
struct SloSettings {
  double min_decode_tps = kDefaultSloMinDecodeTps;  // 0: off
  std::vector<SloPoint> max_ttft{{0, kDefaultSloShortTtftMs}, {kSlo12kTokens, kDefaultSloAt12kMs}};
  int64_t max_short_wall_ms = kDefaultSloShortWallMs;
  // Agent turns, per context band (the floor at the band's top).
  std::vector<SloPoint> max_turn_wall{{0, kDefaultSloShortWallMs}, {kSlo12kTokens, kDefaultSloAt12kMs}};
  int64_t max_warm_ttft_ms = kDefaultSloWarmTtftMs;
  int min_breaches = kDefaultSloMinBreaches;
  double max_breach_share = kDefaultSloMaxBreachShare;
  bool operator==(const SloSettings&) const = default;
};
// The floor of `points` at `size` tokens (see SloPoint).
int64_t slo_floor_ms(const std::vector<SloPoint>& points, int64_t size);

// One capacity check: `concurrency` prompts of `size` tokens released at once.
struct CapacityEntry {
  int64_t size = kDefaultCapacitySize;
  int concurrency = 2;
  bool operator==(const CapacityEntry&) const = default;
};

struct StageDurations {
  int64_t smoke_ms = kDefaultSmokeMs;
  int64_t canary_ms = kDefaultCanaryMs;
  int64_t gate_ms = kDefaultGateMs;
  int64_t soak_ms = kDefaultSoakMs;
  double grace_fraction = kDefaultStageGraceFraction;
  int64_t length_ms(StageKind k) const;
};

struct Cadences {
  int64_t functional_ms = kDefaultFunctionalEveryMs;
  int64_t long_context_ms = kDefaultLongContextEveryMs;
  int64_t burst_ms = kDefaultBurstEveryMs;
  int64_t cancel_ms = kDefaultCancelEveryMs;
  int64_t scrape_ms = kDefaultScrapeEveryMs;
  int64_t gate_pause_ms = kDefaultGatePauseMs;
  int64_t soak_traffic_ms = kDefaultSoakTrafficEveryMs;
  int64_t soak_heavy_ms = kDefaultSoakHeavyEveryMs;
  int64_t gate_long_context_ms = kDefaultGateLongContextEveryMs;
  int64_t build_poll_ms = kDefaultBuildPollMs;
};

struct Limits {
  int64_t wall_timeout_ms = kDefaultWallTimeoutMs;
  int64_t stall_timeout_ms = kDefaultStallTimeoutMs;
  int64_t connect_timeout_ms = kDefaultConnectTimeoutMs;
  int64_t max_response_bytes = kDefaultMaxResponseBytes;
  double prefill_floor_tps = kDefaultPrefillFloorTps;  // prefill allowance: prompt tokens / this
  // The liveness bound's floor (core/limits.h kDefaultUnservedTimeoutMs).
  int64_t unserved_timeout_ms = kDefaultUnservedTimeoutMs;
  // A launch whose default output cap (a request without max_tokens) is below
  // this holds the candidate at smoke (docs/DESIGN.md §3.11).
  int64_t min_server_cap = kDefaultMinServerCap;
};

struct GateRules {
  int64_t min_completed = 1000;     // completed (clean) agent requests in the gate
  double max_failure_ratio = 0.01;  // candidate failures / attempts
  double min_coverage = 0.9;        // fraction of the stage's planned slots actually run
};

struct JudgeRules {
  double alpha = 0.01;         // Mann–Whitney / count-test significance
  double effect_floor = 0.10;  // relative change below this is never a regression
  double hold_band = 0.05;     // regression within effect_floor + hold_band: hold, not reject
  // A latency (first token, whole request) worse by fewer milliseconds than
  // this is never a regression, whatever the ratio: scheduling noise.
  int64_t min_effect_ms = 10;
  double tail_tolerance = 0.25;     // p95/p99 may be this much worse than baseline
  int min_samples = 5;              // per metric and side, below this: inconclusive
  double max_invalid_ratio = 0.05;  // invalid JSON / tool call tolerance before hard failure
  int repeated_5xx = 3;             // thinking-on 5xx the session rule needs (5xx runs: judges/sequential.h)
  // Canary: pooled completions (functional, long context, burst members) fail
  // when the lower Wilson bound of their failure rate is above this
  // (docs/DESIGN.md §3.9): 1 in 8 with HTTP 500 rejects, one transient does not.
  double max_failure_ratio = 0.01;
  // Fresh long-context prefill with fewer than min_samples a side (a canary
  // runs each size about twice): a regression when every candidate sample is
  // this many times worse than every baseline sample (docs/DESIGN.md §3.5).
  double few_sample_factor = 3.0;
  // The candidate against itself (gate and soak against its own earlier
  // stages, docs/DESIGN.md §3.5): a regression only when this many times worse
  // (a time this many times longer, a rate this many times lower). Its
  // earlier stages ran hours before under other load and heat, which the
  // seeds put at ±15 % between sessions and a busy host at far more.
  double self_factor = 2.0;
  // A burst served one at a time on a multi-slot runtime
  // (docs/DESIGN.md §3.9, core/burst_serial.h) rejects only when each place
  // in the queue adds at least this share of one answer's own service time
  // to the time to first token (2 slots at work give about 0.5) ...
  double serial_min_share = kDefaultSerialMinShare;
  // ... and at least this many milliseconds: a runtime whose whole answer
  // takes 2 ms draws a staircase of 2 ms steps out of a busy host alone.
  int64_t serial_min_effect_ms = kDefaultSerialMinEffectMs;
};

// Agent sessions (gate and soak traffic; docs/DESIGN.md §2.13): the seeds'
// orchestrator loop grows its context from ~10K to ~50K tokens over 60-80
// calls, a tool call on most turns, thinking chosen per task.
inline constexpr int64_t kDefaultAgentContextCeiling = 50'000;
inline constexpr int64_t kDefaultAgentBandTokens = 10'000;
inline constexpr double kDefaultAgentThinkingShare = 0.5;
inline constexpr int kDefaultAgentToolEvery = 2;
inline constexpr double kDefaultAgentMinRecovery = 0.5;

struct AgentSettings {
  // A session ends, and a new one starts, once its context would pass this
  // (or the runtime's own per-slot context, whichever is smaller).
  int64_t context_ceiling_tokens = kDefaultAgentContextCeiling;
  // Rows are compared and tool-call failures counted per band of this width.
  int64_t band_tokens = kDefaultAgentBandTokens;
  double thinking_share = kDefaultAgentThinkingShare;  // share of sessions run with thinking on
  bool preserve_thinking = false;                      // keep the runtime's reasoning in the history it is sent back
  int tool_every = kDefaultAgentToolEvery;             // every n-th turn requires a tool call
  // Turns after a malformed tool call that must come back clean, at least.
  double min_recovery_ratio = kDefaultAgentMinRecovery;
  bool operator==(const AgentSettings&) const = default;
};

struct SoakRules {
  double max_footprint_growth = 0.10;        // growth over the initial footprint, sustained
  double max_footprint_slope_mb_per_h = 50;  // Theil–Sen slope bound
  double max_decode_drift = 0.15;            // relative decode tok/s drift first vs last quarter
};

struct GuardRules {
  int64_t swap_growth_bytes = 500LL * 1000 * 1000;  // docs/DESIGN.md §2.10: > 500 MB
  int64_t swapouts_growth = 1000;
  int64_t window_ms = 10 * kMinute;
  bool pressure_critical_trips = true;
  bool operator==(const GuardRules&) const = default;
};

// Everything that may be set globally under "defaults" and overridden per candidate.
struct CampaignSettings {
  StageDurations stages;
  Cadences cadence;
  Limits limits;
  GateRules gate;
  JudgeRules judge;
  SoakRules soak;
  GuardRules guard;
  AgentSettings agent;
  std::vector<int64_t> long_context_sizes = kDefaultLongContextSizes;
  std::vector<int> burst_sizes = kDefaultBurstSizes;
  // nullopt: one entry of kDefaultCapacitySize x slots when the runtime has
  // more than one slot (configured, else as it reports), none otherwise.
  std::optional<std::vector<CapacityEntry>> capacity;
  Sampling sampling;
  SloSettings slo;
  EquivalenceSettings equivalence;
};

// The capacity checks to run: the configured ones, else kDefaultCapacitySize x
// `slots` when the runtime has more than one slot, else none.
std::vector<CapacityEntry> capacity_entries(const CampaignSettings& s, std::optional<int> slots);

enum class BuildSource { Http, Command, Fixed };
struct BuildSpec {
  BuildSource source = BuildSource::Http;
  std::vector<std::string> command;  // Command: argv, run without a shell
  std::string fixed;                 // Fixed: the build string
};

enum class ApiKeyTransport { RequireSecure, AllowInsecure };

// Where a managed candidate's canary finds its baseline after a build change
// (docs/DESIGN.md §3.3, §4.8): the previous promoted build's stored rows
// (History), or that build's program started beside the new one on a port of
// its own, its probes interleaved with the canary's (Interleaved).
enum class AbMode { History, Interleaved };
std::string_view to_string(AbMode m);

struct CandidateConfig {
  std::string name;                        // unique in the file
  std::string model;                       // canonical model id the runtime must report
  WorkloadKind kind = WorkloadKind::Chat;  // chat, or a pooling server (embedding, rerank)
  RuntimeKind runtime = RuntimeKind::OpenAI;
  std::string base_url;  // scheme://host:port[/prefix], no trailing slash
  BuildSpec build;
  std::optional<std::string> baseline;     // name of another candidate
  std::optional<std::string> api_key_env;  // NAME of an environment variable, never the key
  ApiKeyTransport api_key_transport = ApiKeyTransport::RequireSecure;
  std::optional<int> pid;                   // runtime process, if fixed
  std::optional<std::string> process_name;  // else found by listening port, then by name
  std::optional<int> slots;                 // runtime parallel slots, if known
  bool enabled = true;
  std::optional<LaunchSpec> launch;            // managed: soakd starts, watches and stops the runtime
  std::optional<int64_t> memory_budget_bytes;  // footprint above this during a stage is a hard failure
  // Judged while other inference engines are resident (SOLO off): a
  // duplicate_engine event does not make a stage inconclusive.
  bool allow_coexisting = false;
  // A launch default output cap below limits.min_server_cap is accepted: not held at smoke.
  bool accept_server_cap = false;
  AbMode ab = AbMode::History;  // managed only: the canary's baseline after a build change
  CampaignSettings settings;    // defaults merged with this candidate's overrides
};

// The previous promoted build's runtime beside `c`'s canary (ab
// "interleaved", docs/DESIGN.md §4.8): `c` under previous_runtime_name()
// (core/launch.h), its launch running `program` with the same arguments and
// every port it gives set to `port`, base_url on that port, never kept
// running; no pid, process name or memory budget of the candidate's.
CandidateConfig previous_build_candidate(const CandidateConfig& c, const std::string& program, uint16_t port);

struct SamplerSettings {
  int64_t interval_ms = kDefaultSampleEveryMs;
  // A candidate's process samples are read every interval and stored one per
  // process_every (and at once on a new process, an error or a budget breach).
  // 0 (unset): kProcessSampleIntervals intervals, 60 s at the default 5 s.
  int64_t process_every_ms = 0;
  int64_t process_sample_every_ms() const {
    return process_every_ms > 0 ? process_every_ms : kProcessSampleIntervals * interval_ms;
  }
  bool keep_awake = true;
};

// Prometheus figures for fleets: soakd rewrites `textfile` (a node_exporter
// textfile-collector file, *.prom) on every sampler tick. Empty: off.
struct MetricsSettings {
  std::string textfile;  // absolute
};

// While the store cannot write (full disk, lock held, read-only), measured rows
// wait in memory (storage/outbox.h). At the default sampler interval with four
// candidates about one row a second arrives while probing is paused, so the
// bound holds well past stop_after; a row is a few hundred bytes.
inline constexpr int64_t kDefaultMaxQueuedRows = 10'000;
inline constexpr int64_t kMaxQueuedRowsLimit = 1'000'000;
inline constexpr int64_t kDefaultStoreStopAfterMs = 3'600'000;  // then soakd stops; launchd starts it later

struct StoreOutageSettings {
  int64_t max_queued_rows = kDefaultMaxQueuedRows;
  int64_t stop_after_ms = kDefaultStoreStopAfterMs;
};

// Verdict notifications (docs/DESIGN.md §4.11): `command` runs (argv, no
// shell) on every verdict that is not `running` — promoted, rejected,
// inconclusive, blocked, hold — with the verdict as JSON on stdin. Empty: off.
inline constexpr int64_t kDefaultNotifyTimeoutMs = 30 * kSecond;  // then SIGKILL
// soakd's graceful stop waits for a running command: the bound keeps that
// stop within launchd's ExitTimeOut (core/service.h kLaunchdExitTimeOutMs; a static_assert in
// daemon/notifier.cc holds it).
inline constexpr int64_t kMaxNotifyTimeoutMs = 45 * kSecond;

struct NotifySettings {
  std::vector<std::string> command;  // argv[0] looked up in PATH, or a path (resolved against the config file)
  int64_t timeout_ms = kDefaultNotifyTimeoutMs;
};

struct ScheduleSettings {
  std::string nightly_window = "02:00";  // "HH:MM" local, or "now"
  bool exclusive_heavy = true;           // long-context prefill and bursts never overlap on a host
  int max_concurrent_canaries = 1;       // SRE rule: one canary at a time per GPU
};

struct Config {
  std::string source_path;  // file it was read from ("<string>" for tests)
  std::string store_path;   // absolute
  std::string log_path;     // absolute
  CampaignSettings defaults;
  SamplerSettings sampler;
  ScheduleSettings schedule;
  StoreOutageSettings store_outage;
  MetricsSettings metrics;
  NotifySettings notify;
  std::vector<CandidateConfig> candidates;

  const CandidateConfig* find(std::string_view name) const;
  // Stable hash of one candidate's effective configuration (verdict rows carry it).
  std::string candidate_hash(const CandidateConfig& c) const;
};

// The running configuration as everything holds it: immutable once loaded and
// shared. A SIGHUP reload swaps in a new snapshot; whoever still holds the old
// one (a run in flight, a track until it is re-pointed) keeps it alive.
using ConfigSnapshot = std::shared_ptr<const Config>;
// One candidate of a snapshot; keeps the whole snapshot alive (an aliasing
// shared_ptr, see candidate_snapshot()).
using CandidateSnapshot = std::shared_ptr<const CandidateConfig>;
// `c` must be one of cfg->candidates.
inline CandidateSnapshot candidate_snapshot(const ConfigSnapshot& cfg, const CandidateConfig& c) {
  return CandidateSnapshot(cfg, &c);
}

// Parse and validate. `source_name` appears in messages; `base_dir` resolves
// relative paths (the config file's directory). On failure the Error message
// holds one line per problem.
Result<Config> parse_config(const std::string& text, const std::string& source_name, const std::string& base_dir);
Result<Config> load_config(const std::string& path);

// Default locations (macOS: ~/Library/...; elsewhere: XDG state dir).
std::string default_store_path();
std::string default_log_path();
std::string default_config_path();
std::string expand_home(const std::string& path);

}  // namespace soak
