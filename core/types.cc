#include "core/types.h"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

namespace soak {
namespace {

template <class E, size_t N>
using Table = std::array<std::pair<E, std::string_view>, N>;

// A table of an enum's names, its size counted from its entries, never by hand.
template <class E, size_t N>
constexpr Table<E, N> table(const std::pair<E, std::string_view> (&entries)[N]) {
  Table<E, N> t{};
  for (size_t i = 0; i < N; ++i) t[i] = entries[i];
  return t;
}

// Every member of the enum in its declared order (the i-th entry names the
// member whose value is i), each with a name of its own: a member left out or
// moved, or a name given twice, fails the build (static_assert below).
template <class E, size_t N>
constexpr bool in_enum_order(const Table<E, N>& t) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(t[i].first) != i || t[i].second.empty()) return false;
    for (size_t j = 0; j < i; ++j)
      if (t[j].second == t[i].second) return false;
  }
  return true;
}

template <class E, size_t N>
std::string_view name_of(const Table<E, N>& t, E e) {
  for (const auto& [k, v] : t)
    if (k == e) return v;
  return "?";
}

template <class E, size_t N>
std::optional<E> lookup(const Table<E, N>& t, std::string_view s) {
  for (const auto& [k, v] : t)
    if (v == s) return k;
  return std::nullopt;
}

template <class E, size_t N>
std::string joined(const Table<E, N>& t) {
  std::string out;
  for (const auto& [k, v] : t) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

constexpr auto kRuntimes = table<RuntimeKind>({
    {RuntimeKind::LlamaCpp, "llama.cpp"},
    {RuntimeKind::MlxLm, "mlx-lm"},
    {RuntimeKind::Omlx, "omlx"},
    {RuntimeKind::Vllm, "vllm"},
    {RuntimeKind::RapidMlx, "rapid-mlx"},
    {RuntimeKind::Ollama, "ollama"},
    {RuntimeKind::LmStudio, "lmstudio"},
    {RuntimeKind::OpenAI, "openai"},
});

constexpr auto kOutcomes = table<Outcome>({
    {Outcome::Clean, "clean"},
    {Outcome::ConnectRefused, "connect_refused"},
    {Outcome::ConnectTimeout, "connect_timeout"},
    {Outcome::Loading, "loading"},
    {Outcome::Http4xx, "http_4xx"},
    {Outcome::Http5xx, "http_5xx"},
    {Outcome::ContextExceeded, "context_exceeded"},
    {Outcome::NoBody, "no_body"},
    {Outcome::ConnectionReset, "connection_reset"},
    {Outcome::NoTerminal, "no_terminal"},
    {Outcome::StreamError, "stream_error"},
    {Outcome::Stalled, "stalled"},
    {Outcome::Timeout, "timeout"},
    {Outcome::QueueTimeout, "queue_timeout"},
    {Outcome::Truncated, "truncated"},
    {Outcome::MalformedResponse, "malformed_response"},
    {Outcome::MissingFinishReason, "missing_finish_reason"},
    {Outcome::MissingUsage, "missing_usage"},
    {Outcome::ServerTokenCap, "server_token_cap"},
    {Outcome::IdentityMismatch, "identity_mismatch"},
    {Outcome::IdentityUnproven, "identity_unproven"},
    {Outcome::MissingMarker, "missing_marker"},
    {Outcome::EmptyAnswer, "empty_answer"},
    {Outcome::LeakedMarkup, "leaked_markup"},
    {Outcome::InvalidJson, "invalid_json"},
    {Outcome::InvalidToolCall, "invalid_tool_call"},
    {Outcome::EmptyToolArgs, "empty_tool_args"},
    {Outcome::MissingToolCall, "missing_tool_call"},
    {Outcome::Repetition, "repetition"},
    {Outcome::StaleSlot, "stale_slot"},
    {Outcome::SerializedBurst, "serialized_burst"},
    {Outcome::CancelledByDaemon, "cancelled_by_daemon"},
    {Outcome::HarnessError, "harness_error"},
});

constexpr auto kProbeKinds = table<ProbeKind>({
    {ProbeKind::Health, "health"},
    {ProbeKind::Identity, "identity"},
    {ProbeKind::Marker, "marker"},
    {ProbeKind::Stream, "stream"},
    {ProbeKind::StrictJson, "strict_json"},
    {ProbeKind::ToolCall, "tool_call"},
    {ProbeKind::LongContext, "long_context"},
    {ProbeKind::SharedPrefix, "shared_prefix"},
    {ProbeKind::Burst, "burst"},
    {ProbeKind::Cancel, "cancel"},
    {ProbeKind::Thinking, "thinking"},
    {ProbeKind::Repetition, "repetition"},
    {ProbeKind::Embeddings, "embeddings"},
    {ProbeKind::Rerank, "rerank"},
    {ProbeKind::Scrape, "scrape"},
    {ProbeKind::Agent, "agent"},
    {ProbeKind::Build, "build"},
    {ProbeKind::Capacity, "capacity"},
    {ProbeKind::Equivalence, "equivalence"},
});

constexpr auto kWorkloadKinds = table<WorkloadKind>({
    {WorkloadKind::Chat, "chat"},
    {WorkloadKind::Embedding, "embedding"},
    {WorkloadKind::Rerank, "rerank"},
});

constexpr auto kCacheStates = table<CacheState>({
    {CacheState::None, "none"},
    {CacheState::Fresh, "fresh"},
    {CacheState::Repeat, "repeat"},
    {CacheState::SharedPrefix, "shared_prefix"},
});

constexpr auto kStageKinds = table<StageKind>({
    {StageKind::Smoke, "smoke"},
    {StageKind::Canary, "canary"},
    {StageKind::Gate, "gate"},
    {StageKind::Soak, "soak"},
});

constexpr auto kStageStates = table<StageState>({
    {StageState::Pending, "pending"},
    {StageState::Running, "running"},
    {StageState::Passed, "passed"},
    {StageState::Failed, "failed"},
    {StageState::Hold, "hold"},
    {StageState::Inconclusive, "inconclusive"},
    {StageState::Aborted, "aborted"},
    {StageState::Blocked, "blocked"},
});

constexpr auto kVerdicts = table<VerdictState>({
    {VerdictState::Running, "running"},
    {VerdictState::Promoted, "promoted"},
    {VerdictState::Rejected, "rejected"},
    {VerdictState::Hold, "hold"},
    {VerdictState::Inconclusive, "inconclusive"},
    {VerdictState::Blocked, "blocked"},
});

constexpr auto kThermalLevels = table<ThermalLevel>({
    {ThermalLevel::Nominal, "nominal"},
    {ThermalLevel::Moderate, "moderate"},
    {ThermalLevel::Heavy, "heavy"},
    {ThermalLevel::Trapping, "trapping"},
    {ThermalLevel::Sleeping, "sleeping"},
});

constexpr auto kEventKinds = table<EventKind>({
    {EventKind::DaemonStart, "daemon_start"},
    {EventKind::DaemonStop, "daemon_stop"},
    {EventKind::ConfigReload, "config_reload"},
    {EventKind::BuildChange, "build_change"},
    {EventKind::Control, "control"},
    {EventKind::StageExtended, "stage_extended"},
    {EventKind::Gap, "gap"},
    {EventKind::ClockStep, "clock_step"},
    {EventKind::GuardTrip, "guard_trip"},
    {EventKind::ProcessRestart, "process_restart"},
    {EventKind::ProcessGone, "process_gone"},
    {EventKind::DuplicateEngine, "duplicate_engine"},
    {EventKind::MemoryBudget, "memory_budget"},
    {EventKind::HeavyWait, "heavy_wait"},
    {EventKind::Notify, "notify"},
    {EventKind::Unserved, "unserved"},
});

constexpr auto kMetricResults = table<MetricResult>({
    {MetricResult::Pass, "pass"},
    {MetricResult::Fail, "fail"},
    {MetricResult::Marginal, "marginal"},
    {MetricResult::Insufficient, "insufficient"},
});

constexpr auto kLaunchStates = table<LaunchState>({
    {LaunchState::Running, "running"},
    {LaunchState::LeftRunning, "left_running"},
    {LaunchState::Exited, "exited"},
    {LaunchState::Stopped, "stopped"},
    {LaunchState::OrphanStopped, "orphan_stopped"},
    {LaunchState::Gone, "gone"},
});

constexpr auto kControlActions = table<ControlAction>({
    {ControlAction::Start, "start"},
    {ControlAction::Abort, "abort"},
    {ControlAction::Promote, "promote"},
});

static_assert(in_enum_order(kRuntimes), "kRuntimes: every member, in its declared order, each named once");
static_assert(in_enum_order(kOutcomes), "kOutcomes: every member, in its declared order, each named once");
static_assert(in_enum_order(kProbeKinds), "kProbeKinds: every member, in its declared order, each named once");
static_assert(in_enum_order(kWorkloadKinds), "kWorkloadKinds: every member, in its declared order, each named once");
static_assert(in_enum_order(kCacheStates), "kCacheStates: every member, in its declared order, each named once");
static_assert(in_enum_order(kStageKinds), "kStageKinds: every member, in its declared order, each named once");
static_assert(in_enum_order(kStageStates), "kStageStates: every member, in its declared order, each named once");
static_assert(in_enum_order(kVerdicts), "kVerdicts: every member, in its declared order, each named once");
static_assert(in_enum_order(kThermalLevels), "kThermalLevels: every member, in its declared order, each named once");
static_assert(in_enum_order(kEventKinds), "kEventKinds: every member, in its declared order, each named once");
static_assert(in_enum_order(kMetricResults), "kMetricResults: every member, in its declared order, each named once");
static_assert(in_enum_order(kLaunchStates), "kLaunchStates: every member, in its declared order, each named once");
static_assert(in_enum_order(kControlActions), "kControlActions: every member, in its declared order, each named once");

}  // namespace

std::string_view to_string(LaunchState s) { return name_of(kLaunchStates, s); }
std::optional<LaunchState> parse_launch_state(std::string_view s) { return lookup(kLaunchStates, s); }
std::string launch_state_names() { return joined(kLaunchStates); }

std::string_view to_string(EventKind k) { return name_of(kEventKinds, k); }
std::optional<EventKind> parse_event_kind(std::string_view s) { return lookup(kEventKinds, s); }
std::string event_kind_names() { return joined(kEventKinds); }

std::string_view to_string(MetricResult r) { return name_of(kMetricResults, r); }
std::optional<MetricResult> parse_metric_result(std::string_view s) { return lookup(kMetricResults, s); }
std::string metric_result_names() { return joined(kMetricResults); }

std::string_view to_string(ControlAction a) { return name_of(kControlActions, a); }
std::optional<ControlAction> parse_control_action(std::string_view s) { return lookup(kControlActions, s); }
std::string control_action_names() { return joined(kControlActions); }

std::string_view to_string(RuntimeKind k) { return name_of(kRuntimes, k); }
std::optional<RuntimeKind> parse_runtime_kind(std::string_view s) { return lookup(kRuntimes, s); }
std::string runtime_kind_names() { return joined(kRuntimes); }

std::string_view to_string(Outcome o) { return name_of(kOutcomes, o); }
std::optional<Outcome> parse_outcome(std::string_view s) { return lookup(kOutcomes, s); }
std::string outcome_names() { return joined(kOutcomes); }

OutcomeCategory category_of(Outcome o) {
  switch (o) {
    case Outcome::Clean: return OutcomeCategory::Clean;
    case Outcome::CancelledByDaemon:
    case Outcome::HarnessError: return OutcomeCategory::Harness;
    default: return OutcomeCategory::CandidateFailure;
  }
}

std::string_view to_string(ProbeKind k) { return name_of(kProbeKinds, k); }
std::optional<ProbeKind> parse_probe_kind(std::string_view s) { return lookup(kProbeKinds, s); }
std::string probe_kind_names() { return joined(kProbeKinds); }

std::string_view to_string(WorkloadKind k) { return name_of(kWorkloadKinds, k); }
std::optional<WorkloadKind> parse_workload_kind(std::string_view s) { return lookup(kWorkloadKinds, s); }
std::string workload_kind_names() { return joined(kWorkloadKinds); }

std::string_view to_string(CacheState c) { return name_of(kCacheStates, c); }
std::optional<CacheState> parse_cache_state(std::string_view s) { return lookup(kCacheStates, s); }
std::string cache_state_names() { return joined(kCacheStates); }

std::string_view to_string(StageKind k) { return name_of(kStageKinds, k); }
std::optional<StageKind> parse_stage_kind(std::string_view s) { return lookup(kStageKinds, s); }
std::string stage_kind_names() { return joined(kStageKinds); }

std::string_view to_string(StageState s) { return name_of(kStageStates, s); }
std::optional<StageState> parse_stage_state(std::string_view s) { return lookup(kStageStates, s); }
std::string stage_state_names() { return joined(kStageStates); }

std::string_view to_string(VerdictState v) { return name_of(kVerdicts, v); }
std::optional<VerdictState> parse_verdict_state(std::string_view s) { return lookup(kVerdicts, s); }

std::string_view to_string(ThermalLevel t) { return name_of(kThermalLevels, t); }
std::optional<ThermalLevel> parse_thermal_level(std::string_view s) { return lookup(kThermalLevels, s); }
std::optional<ThermalLevel> thermal_level_of(int64_t value) {
  for (const auto& [k, v] : kThermalLevels)
    if (static_cast<int64_t>(k) == value) return k;
  return std::nullopt;
}
std::string verdict_state_names() { return joined(kVerdicts); }

std::string Sampling::to_json() const {
  nlohmann::ordered_json j;
  j["temperature"] = temperature;
  j["top_p"] = top_p;
  j["top_k"] = top_k;
  return j.dump();
}

}  // namespace soak
