// The stored columns of every row type, declared once each (storage/row_codec.h
// says how a declaration becomes SQL, bindings and reads). The order here is the
// order of the SELECT list and of the INSERT columns; the tables themselves are
// storage/schema.cc's, which these names must match (a name that does not
// match fails every statement of that table, so the store tests catch it).
// Internal to soak_storage.
#pragma once

#include <string_view>

#include "core/golden.h"
#include "core/types.h"
#include "storage/evidence_json.h"
#include "storage/row_codec.h"

namespace soak {

// ---- the stored enums and their names (core/types.h) -------------------------
template <>
struct Vocabulary<RuntimeKind> {
  static constexpr auto parse = &parse_runtime_kind;
  static constexpr auto names = &runtime_kind_names;
};
template <>
struct Vocabulary<ProbeKind> {
  static constexpr auto parse = &parse_probe_kind;
  static constexpr auto names = &probe_kind_names;
};
template <>
struct Vocabulary<CacheState> {
  static constexpr auto parse = &parse_cache_state;
  static constexpr auto names = &cache_state_names;
};
template <>
struct Vocabulary<Outcome> {
  static constexpr auto parse = &parse_outcome;
  static constexpr auto names = &outcome_names;
};
template <>
struct Vocabulary<StageKind> {
  static constexpr auto parse = &parse_stage_kind;
  static constexpr auto names = &stage_kind_names;
};
template <>
struct Vocabulary<StageState> {
  static constexpr auto parse = &parse_stage_state;
  static constexpr auto names = &stage_state_names;
};
template <>
struct Vocabulary<VerdictState> {
  static constexpr auto parse = &parse_verdict_state;
  static constexpr auto names = &verdict_state_names;
};
template <>
struct Vocabulary<EventKind> {
  static constexpr auto parse = &parse_event_kind;
  static constexpr auto names = &event_kind_names;
};
template <>
struct Vocabulary<LaunchState> {
  static constexpr auto parse = &parse_launch_state;
  static constexpr auto names = &launch_state_names;
};
template <>
struct Vocabulary<ControlAction> {
  static constexpr auto parse = &parse_control_action;
  static constexpr auto names = &control_action_names;
};

// Text columns whose schema default is a fixed document: an empty field is
// stored as that default, so plain-SQL readers never see "".
template <auto M, const std::string_view& Empty>
void bind_or_default(Stmt& s, const RowOf<M>& r) {
  const std::string& v = r.*M;
  s.bind(v.empty() ? Empty : std::string_view(v));
}
inline constexpr std::string_view kEmptyObject = "{}";
inline constexpr std::string_view kNoBaseline = "none";

// The sampling settings nearly every probe row carries (the default sampling
// as a request that sends top_k records it): stored as "=" since schema 9,
// 42 bytes less on every row (a tenth of the store), and read back as the
// text it stands for. A fixed text, not today's default: rows of another
// sampling, or of a changed default, are stored as they are.
inline constexpr std::string_view kCommonSampling = R"({"temperature":0.6,"top_p":0.95,"top_k":20})";
inline constexpr std::string_view kCommonSamplingMark = "=";
inline void bind_sampling(Stmt& s, const ProbeResult& r) {
  s.bind(r.sampling_json == kCommonSampling ? kCommonSamplingMark : std::string_view(r.sampling_json));
}
inline std::optional<std::string> read_sampling(const Stmt& s, int c, ProbeResult& r) {
  auto problem = read_field(s, c, r.sampling_json);
  if (!problem && r.sampling_json == kCommonSamplingMark) r.sampling_json = kCommonSampling;
  return problem;
}

// ---- candidates --------------------------------------------------------------
template <>
struct Table<CandidateRow> {
  using R = CandidateRow;
  static constexpr std::string_view name = "candidates";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::host_id>("host_id"),
      col<&R::name>("name"),
      col<&R::model>("model"),
      col<&R::runtime>("runtime"),
      col<&R::build>("build"),
      col<&R::base_url>("base_url"),
      col<&R::first_seen_ms>("first_seen_ms"),
      col<&R::last_seen_ms>("last_seen_ms"),
      col<&R::baseline_id>("baseline_id"),
      col<&R::fingerprint>("fingerprint"),
  };
};

// ---- probe results -----------------------------------------------------------
// outcome_category is derived from the outcome (category_of) and stored for
// plain-SQL readers; soakd itself reads the outcome and derives it again.
inline std::string_view stored_category(Outcome o) {
  switch (category_of(o)) {
    case OutcomeCategory::Clean: return "clean";
    case OutcomeCategory::CandidateFailure: return "candidate";
    case OutcomeCategory::Harness: return "harness";
  }
  return "harness";
}

template <>
struct Table<ProbeResult> {
  using R = ProbeResult;
  static constexpr std::string_view name = "probe_results";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::candidate_id>("candidate_id"),
      col<&R::host_id>("host_id"),
      col<&R::stage_id>("stage_id"),
      col<&R::started_wall_ms>("started_ms"),
      col<&R::kind>("kind"),
      col<&R::task>("task"),
      col<&R::workload_id>("workload_id"),
      col<&R::fixture_hash>("fixture_hash"),
      col<&R::size_tokens>("size_tokens"),
      col<&R::cache_state>("cache_state"),
      {"sampling", ColumnUse::Stored, &bind_sampling, &read_sampling, {}, &json_document<&R::sampling_json>},
      col<&R::thinking>("thinking"),
      col<&R::client_concurrency>("client_concurrency"),
      col<&R::runtime_slots>("runtime_slots"),
      col<&R::group_id>("group_id"),
      col<&R::outcome>("outcome"),
      {"outcome_category", ColumnUse::WriteOnly, [](Stmt& s, const R& r) { s.bind(stored_category(r.outcome)); },
       nullptr},
      col<&R::http_status>("http_status"),
      col<&R::detail>("detail"),
      col<&R::t_connect_us>("t_connect_us"),
      col<&R::t_first_byte_us>("t_first_byte_us"),
      col<&R::t_first_event_us>("t_first_event_us"),
      col<&R::t_first_token_us>("t_first_token_us"),
      col<&R::t_last_token_us>("t_last_token_us"),
      col<&R::t_terminal_us>("t_terminal_us"),
      col<&R::t_done_us>("t_done_us"),
      col<&R::itl_p50_us>("itl_p50_us"),
      col<&R::itl_p95_us>("itl_p95_us"),
      col<&R::itl_max_us>("itl_max_us"),
      col<&R::client_decode_tps>("client_decode_tps"),
      col<&R::timing_artifact>("timing_artifact"),
      col<&R::prompt_tokens>("prompt_tokens"),
      col<&R::completion_tokens>("completion_tokens"),
      col<&R::reasoning_tokens>("reasoning_tokens"),
      col<&R::content_events>("content_events"),
      col<&R::reasoning_events>("reasoning_events"),
      col<&R::server_prompt_n>("server_prompt_n"),
      col<&R::server_cache_n>("server_cache_n"),
      col<&R::server_predicted_n>("server_predicted_n"),
      col<&R::server_prompt_ms>("server_prompt_ms"),
      col<&R::server_prompt_tps>("server_prompt_tps"),
      col<&R::server_predicted_ms>("server_predicted_ms"),
      col<&R::server_predicted_tps>("server_predicted_tps"),
      col<&R::server_ttft_ms>("server_ttft_ms"),
      col<&R::server_draft_n>("server_draft_n"),
      col<&R::server_draft_accepted>("server_draft_accepted"),
      col<&R::server_load_ms>("server_load_ms"),
      col<&R::server_running>("server_running"),
      col<&R::server_waiting>("server_waiting"),
      col<&R::queue_wait_us>("queue_wait_us"),
      col<&R::finish_reason>("finish_reason"),
      col<&R::response_model>("response_model"),
      col<&R::bytes_received>("bytes_received"),
      col<&R::body_hash>("body_hash"),
      col<&R::excerpt>("excerpt"),
      doc<&R::extra_json>("extra"),
  };
};

// ---- samples -----------------------------------------------------------------
template <>
struct Table<HostSample> {
  using R = HostSample;
  static constexpr std::string_view name = "host_samples";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::host_id>("host_id"),
      col<&R::wall_ms>("ts_ms"),
      col<&R::free_bytes>("free_bytes"),
      col<&R::active_bytes>("active_bytes"),
      col<&R::inactive_bytes>("inactive_bytes"),
      col<&R::wired_bytes>("wired_bytes"),
      col<&R::compressed_bytes>("compressed_bytes"),
      col<&R::available_bytes>("available_bytes"),
      col<&R::total_bytes>("total_bytes"),
      col<&R::swap_used_bytes>("swap_used_bytes"),
      col<&R::swap_total_bytes>("swap_total_bytes"),
      col<&R::pageins>("pageins"),
      col<&R::pageouts>("pageouts"),
      col<&R::swapins>("swapins"),
      col<&R::swapouts>("swapouts"),
      col<&R::pressure_level>("pressure_level"),
      col<&R::memorystatus_level>("memorystatus_level"),
      col<&R::psi_some_avg10>("psi_some_avg10"),
      col<&R::psi_full_avg10>("psi_full_avg10"),
      col<&R::psi_some_total_us>("psi_some_total_us"),
      col<&R::psi_full_total_us>("psi_full_total_us"),
      col<&R::thermal_level>("thermal_level"),
      col<&R::error>("error"),
  };
};

template <>
struct Table<ProcessSample> {
  using R = ProcessSample;
  static constexpr std::string_view name = "process_samples";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::host_id>("host_id"),
      col<&R::candidate_id>("candidate_id"),
      col<&R::wall_ms>("ts_ms"),
      col<&R::pid>("pid"),
      col<&R::name>("name"),
      col<&R::start_time>("start_time"),
      col<&R::footprint_bytes>("footprint_bytes"),
      col<&R::resident_bytes>("resident_bytes"),
      col<&R::swap_bytes>("swap_bytes"),
      col<&R::pss_bytes>("pss_bytes"),
      col<&R::error>("error"),
  };
};

// ---- events ------------------------------------------------------------------
template <>
struct Table<Event> {
  using R = Event;
  static constexpr std::string_view name = "events";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::wall_ms>("ts_ms"),
      col<&R::host_id>("host_id"),
      col<&R::candidate_id>("candidate_id"),
      col<&R::kind>("kind"),
      {"detail", ColumnUse::Stored, &bind_or_default<&R::detail_json, kEmptyObject>, &read_member<&R::detail_json>},
      col<&R::duration_ms>("duration_ms"),
  };
};

// ---- stages: update_stage rewrites the Mutable columns ------------------------
template <>
struct Table<StageRow> {
  using R = StageRow;
  static constexpr std::string_view name = "stages";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::candidate_id>("candidate_id"),
      col<&R::kind>("kind"),
      col<&R::state>("state", ColumnUse::Mutable),
      col<&R::started_ms>("started_ms"),
      col<&R::length_ms>("length_ms"),
      col<&R::deadline_ms>("deadline_ms", ColumnUse::Mutable),
      col<&R::ended_ms>("ended_ms", ColumnUse::Mutable),
      col<&R::reason>("reason", ColumnUse::Mutable),
  };
};

// ---- verdicts ----------------------------------------------------------------
// `status()` reads verdicts without their metrics and judge input (summary_sql).
inline std::optional<std::string> read_metrics(const Stmt& s, int c, VerdictRow& v) {
  auto m = metrics_from_json(s.text(c));
  if (!m) return m.message();
  v.metrics = std::move(*m);
  return std::nullopt;
}

template <>
struct Table<VerdictRow> {
  using R = VerdictRow;
  static constexpr std::string_view name = "verdicts";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::candidate_id>("candidate_id"),
      col<&R::stage_id>("stage_id"),
      col<&R::wall_ms>("ts_ms"),
      col<&R::state>("state"),
      col<&R::stage>("stage"),
      col<&R::reason>("reason"),
      col<&R::judge_version>("judge_version"),
      col<&R::config_hash>("config_hash"),
      col<&R::evidence_first_id>("evidence_first_id"),
      col<&R::evidence_last_id>("evidence_last_id"),
      col<&R::baseline_id>("baseline_id"),
      {"baseline_mode", ColumnUse::Stored, &bind_or_default<&R::baseline_mode, kNoBaseline>,
       &read_member<&R::baseline_mode>},
      {"metrics", ColumnUse::Stored, [](Stmt& s, const R& v) { s.bind(metrics_to_json(v.metrics)); }, &read_metrics,
       "'[]'"},
      col<&R::is_override>("is_override"),
      col<&R::who>("who"),
      col<&R::why>("why"),
      {"judge_input", ColumnUse::Stored, &bind_or_default<&R::judge_input_json, kEmptyObject>,
       &read_member<&R::judge_input_json>, "''"},
  };
};

// ---- context reach: one row per judged canary -----------------------------------
template <>
struct Table<ContextReach> {
  using R = ContextReach;
  static constexpr std::string_view name = "context_reach";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::candidate_id>("candidate_id"),
      col<&R::stage_id>("stage_id"),
      col<&R::wall_ms>("ts_ms"),
      col<&R::reach_tokens>("reach_tokens"),
      col<&R::configured_tokens>("configured_tokens"),
      col<&R::runtime_ctx_tokens>("runtime_ctx_tokens"),
      col<&R::runtime_ctx_source>("runtime_ctx_source"),
  };
};

// ---- golden answers: one row per prompt and run (docs/DESIGN.md §3.13) ---------
template <>
struct Vocabulary<LogprobShape> {
  static constexpr auto parse = &parse_logprob_shape;
  static constexpr auto names = &logprob_shape_names;
};
template <>
struct Table<GoldenAnswerRow> {
  using R = GoldenAnswerRow;
  static constexpr std::string_view name = "golden_answers";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::candidate_id>("candidate_id"),
      col<&R::stage_id>("stage_id"),
      col<&R::wall_ms>("ts_ms"),
      col<&R::run>("run"),
      col<&R::set_hash>("set_hash"),
      col<&R::prompt_id>("prompt_id"),
      col<&R::text_hash>("text_hash"),
      col<&R::logprobs>("logprobs"),
      col<&R::steps>("steps"),
  };
};

// ---- control requests: handled_ms and result are set by mark_control_handled --
template <>
struct Table<ControlRequest> {
  using R = ControlRequest;
  static constexpr std::string_view name = "control_requests";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::wall_ms>("ts_ms"),
      col<&R::candidate>("candidate"),
      col<&R::candidate_id>("candidate_id"),
      col<&R::action>("action"),
      col<&R::is_override>("is_override"),
      col<&R::who>("who"),
      col<&R::why>("why"),
      col<&R::handled_ms>("handled_ms", ColumnUse::ReadOnly),
      col<&R::result>("result", ColumnUse::ReadOnly),
  };
};

// ---- runtime launches: update_launch rewrites the Mutable columns -------------
template <>
struct Table<RuntimeLaunch> {
  using R = RuntimeLaunch;
  static constexpr std::string_view name = "runtime_launches";
  static constexpr Column<R> columns[] = {
      col<&R::id>("id", ColumnUse::RowId),
      col<&R::host_id>("host_id"),
      col<&R::name>("name"),
      col<&R::candidate_id>("candidate_id", ColumnUse::Mutable),
      col<&R::pid>("pid"),
      col<&R::start_time>("start_time"),
      col<&R::executable>("executable"),
      col<&R::exe_size>("exe_size"),
      col<&R::exe_mtime_ms>("exe_mtime_ms"),
      col<&R::exe_hash>("exe_hash"),
      col<&R::argv_json>("argv"),
      col<&R::started_ms>("started_ms"),
      col<&R::ready_ms>("ready_ms", ColumnUse::Mutable),
      col<&R::state>("state", ColumnUse::Mutable),
      col<&R::ended_ms>("ended_ms", ColumnUse::Mutable),
      col<&R::exit_status>("exit_status", ColumnUse::Mutable),
      col<&R::term_signal>("term_signal", ColumnUse::Mutable),
      col<&R::log_tail>("log_tail", ColumnUse::Mutable),
      col<&R::detail>("detail", ColumnUse::Mutable),
  };
};

}  // namespace soak
