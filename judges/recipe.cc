#include "judges/recipe.h"

#include <nlohmann/json.hpp>

namespace soak {

using json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kStageEndNames[] = {"completed", "stopped", "timed_out"};

std::string_view end_name(StageEnd e) { return kStageEndNames[static_cast<int>(e)]; }

std::optional<StageEnd> parse_end(std::string_view s) {
  for (int i = 0; i < 3; ++i)
    if (kStageEndNames[i] == s) return static_cast<StageEnd>(i);
  return std::nullopt;
}

std::optional<BaselineMode> parse_mode(std::string_view s) {
  for (auto m : {BaselineMode::None, BaselineMode::Interleaved, BaselineMode::History})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

template <class T>
void opt_to(json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? json(*v) : json(nullptr);
}

template <class T>
std::optional<T> opt_from(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

}  // namespace

std::string recipe_to_json(const StoredRecipe& stored) {
  const JudgeRecipe& r = stored.recipe;
  const RowSelection& rows = stored.rows;
  // Keys in the order every stored verdict has them.
  json j;
  j["stage"] = to_string(r.stage);
  j["end"] = end_name(r.end);
  j["candidate_id"] = r.candidate_id;
  j["host_id"] = r.host_id;
  opt_to(j, "stage_id", r.stage_id);
  j["now_ms"] = r.now_ms;
  j["config_hash"] = r.config_hash;
  j["judge"] = {{"alpha", r.judge.alpha},
                {"effect_floor", r.judge.effect_floor},
                {"hold_band", r.judge.hold_band},
                {"tail_tolerance", r.judge.tail_tolerance},
                {"min_samples", r.judge.min_samples},
                {"max_invalid_ratio", r.judge.max_invalid_ratio},
                {"repeated_5xx", r.judge.repeated_5xx},
                {"max_failure_ratio", r.judge.max_failure_ratio}};
  // Written only when set apart from its default, so recipes keep the shape
  // every earlier verdict has.
  if (r.judge.few_sample_factor != JudgeRules{}.few_sample_factor)
    j["judge"]["few_sample_factor"] = r.judge.few_sample_factor;
  if (r.judge.self_factor != JudgeRules{}.self_factor) j["judge"]["self_factor"] = r.judge.self_factor;
  j["judge"]["min_effect_ms"] = r.judge.min_effect_ms;
  j["judge"]["serial_min_share"] = r.judge.serial_min_share;
  j["judge"]["serial_min_effect_ms"] = r.judge.serial_min_effect_ms;
  j["gate"] = {{"min_completed", r.gate.min_completed},
               {"max_failure_ratio", r.gate.max_failure_ratio},
               {"min_coverage", r.gate.min_coverage}};
  j["soak"] = {{"max_footprint_growth", r.soak.max_footprint_growth},
               {"max_footprint_slope_mb_per_h", r.soak.max_footprint_slope_mb_per_h},
               {"max_decode_drift", r.soak.max_decode_drift}};
  j["guard"] = {{"swap_growth_bytes", r.guard.swap_growth_bytes},
                {"swapouts_growth", r.guard.swapouts_growth},
                {"window_ms", r.guard.window_ms},
                {"pressure_critical_trips", r.guard.pressure_critical_trips}};
  j["slots_planned"] = r.slots_planned;
  j["slots_run"] = r.slots_run;
  j["baseline_mode"] = to_string(r.baseline_mode);
  opt_to(j, "baseline_id", r.baseline_id);
  if (!r.missing_baseline.empty()) j["missing_baseline"] = r.missing_baseline;
  if (!r.baseline_note.empty()) j["baseline_note"] = r.baseline_note;
  // Written only when they apply, so recipes of unmanaged candidates without a
  // budget keep the shape every earlier verdict has.
  if (r.supervision == Supervision::Managed) j["managed"] = true;
  if (r.memory_budget_bytes) j["memory_budget_bytes"] = *r.memory_budget_bytes;
  if (!r.long_context_sizes.empty()) j["long_context_sizes"] = r.long_context_sizes;
  if (r.allow_coexisting) j["allow_coexisting"] = true;
  if (r.cache_cap_mib) j["cache_cap_mib"] = *r.cache_cap_mib;
  if (r.workload != WorkloadKind::Chat) j["workload"] = to_string(r.workload);
  if (!r.heavy_waits.empty()) {
    auto& hw = j["heavy_waits"] = nlohmann::ordered_json::array();
    for (const auto& w : r.heavy_waits)
      hw.push_back({{"task", w.task},
                    {"planned", w.planned},
                    {"runs", w.runs},
                    {"waits", w.waits},
                    {"waited_ms", w.waited_ms},
                    {"longest_ms", w.longest_ms}});
  }
  if (r.agent != AgentSettings{}) {
    const AgentSettings& a = r.agent;
    j["agent"] = {{"context_ceiling", a.context_ceiling_tokens},
                  {"band_tokens", a.band_tokens},
                  {"thinking_share", a.thinking_share},
                  {"preserve_thinking", a.preserve_thinking},
                  {"tool_every", a.tool_every},
                  {"min_recovery_ratio", a.min_recovery_ratio}};
  }
  if (!r.own_stage_ids.empty()) j["own_stage_ids"] = r.own_stage_ids;
  floors_to_json(r.slo, r.launch_cap, j);  // only when they apply
  if (r.equivalence) {
    const EquivalenceRecipe& e = *r.equivalence;
    j["equivalence"] = {
        {"max_fork_margin", e.rules.max_fork_margin}, {"kl_factor", e.rules.kl_factor}, {"min_kl", e.rules.min_kl}};
    opt_to(j["equivalence"], "reference_id", e.reference_id);
    j["equivalence"]["top1"] = e.top1 == TopOneRule::AllPrompts ? "all_prompts" : "unconstrained_only";
  }
  j["since_ms"] = rows.since_ms;
  j["until_ms"] = rows.until_ms;
  j["baseline_since_ms"] = rows.baseline_since_ms;
  j["baseline_until_ms"] = rows.baseline_until_ms;
  j["max_ids"] = {{"probe", rows.max_ids.probe},
                  {"host_sample", rows.max_ids.host_sample},
                  {"process_sample", rows.max_ids.process_sample},
                  {"event", rows.max_ids.event}};
  if (r.equivalence) j["max_ids"]["golden"] = rows.max_ids.golden;
  return j.dump();
}

Result<StoredRecipe> recipe_from_json(const std::string& s) {
  json j = json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("stage"))
    return make_error("the verdict carries no judge input (it was not produced by a judge, e.g. an override)");
  try {
    StoredRecipe stored;
    JudgeRecipe& r = stored.recipe;
    RowSelection& rows = stored.rows;
    auto stage = parse_stage_kind(j.at("stage").get<std::string>());
    auto end = parse_end(j.at("end").get<std::string>());
    auto mode = parse_mode(j.at("baseline_mode").get<std::string>());
    if (!stage || !end || !mode) return make_error("judge input has an unknown stage, end or baseline mode");
    r.stage = *stage;
    r.end = *end;
    r.baseline_mode = *mode;
    r.candidate_id = j.at("candidate_id").get<int64_t>();
    r.host_id = j.at("host_id").get<int64_t>();
    r.stage_id = opt_from<int64_t>(j, "stage_id");
    r.now_ms = j.at("now_ms").get<int64_t>();
    r.config_hash = j.at("config_hash").get<std::string>();
    const auto& jj = j.at("judge");
    r.judge.alpha = jj.at("alpha").get<double>();
    r.judge.effect_floor = jj.at("effect_floor").get<double>();
    r.judge.hold_band = jj.at("hold_band").get<double>();
    r.judge.tail_tolerance = jj.at("tail_tolerance").get<double>();
    r.judge.min_samples = jj.at("min_samples").get<int>();
    r.judge.max_invalid_ratio = jj.at("max_invalid_ratio").get<double>();
    r.judge.repeated_5xx = jj.at("repeated_5xx").get<int>();
    // Absent from recipes stored before the canary's pooled failure rule.
    r.judge.max_failure_ratio = jj.value("max_failure_ratio", JudgeRules{}.max_failure_ratio);
    r.judge.few_sample_factor = jj.value("few_sample_factor", JudgeRules{}.few_sample_factor);
    r.judge.self_factor = jj.value("self_factor", JudgeRules{}.self_factor);
    // Absent from recipes stored before judge-9, which had no absolute floor.
    r.judge.min_effect_ms = jj.value("min_effect_ms", int64_t{0});
    // Absent from recipes stored before the burst rule had an effect floor:
    // the share it had built in, and no floor in milliseconds.
    r.judge.serial_min_share = jj.value("serial_min_share", kDefaultSerialMinShare);
    r.judge.serial_min_effect_ms = jj.value("serial_min_effect_ms", int64_t{0});
    const auto& g = j.at("gate");
    r.gate.min_completed = g.at("min_completed").get<int64_t>();
    r.gate.max_failure_ratio = g.at("max_failure_ratio").get<double>();
    r.gate.min_coverage = g.at("min_coverage").get<double>();
    const auto& sk = j.at("soak");
    r.soak.max_footprint_growth = sk.at("max_footprint_growth").get<double>();
    r.soak.max_footprint_slope_mb_per_h = sk.at("max_footprint_slope_mb_per_h").get<double>();
    r.soak.max_decode_drift = sk.at("max_decode_drift").get<double>();
    const auto& gd = j.at("guard");
    r.guard.swap_growth_bytes = gd.at("swap_growth_bytes").get<int64_t>();
    r.guard.swapouts_growth = gd.at("swapouts_growth").get<int64_t>();
    r.guard.window_ms = gd.at("window_ms").get<int64_t>();
    r.guard.pressure_critical_trips = gd.at("pressure_critical_trips").get<bool>();
    r.slots_planned = j.at("slots_planned").get<int64_t>();
    r.slots_run = j.at("slots_run").get<int64_t>();
    r.baseline_id = opt_from<int64_t>(j, "baseline_id");
    r.missing_baseline = j.value("missing_baseline", std::string());
    r.baseline_note = j.value("baseline_note", std::string());
    r.supervision = j.value("managed", false) ? Supervision::Managed : Supervision::Unmanaged;
    r.memory_budget_bytes = opt_from<int64_t>(j, "memory_budget_bytes");
    r.long_context_sizes = j.value("long_context_sizes", std::vector<int64_t>{});
    r.allow_coexisting = j.value("allow_coexisting", false);
    if (j.contains("heavy_waits"))
      for (const auto& w : j.at("heavy_waits"))
        r.heavy_waits.push_back(HeavyWait{w.at("task").get<std::string>(), w.at("planned").get<int64_t>(),
                                          w.at("runs").get<int64_t>(), w.at("waits").get<int64_t>(),
                                          w.at("waited_ms").get<int64_t>(), w.at("longest_ms").get<int64_t>()});
    r.cache_cap_mib = opt_from<int64_t>(j, "cache_cap_mib");
    if (j.contains("workload")) {
      auto w = parse_workload_kind(j.at("workload").get<std::string>());
      if (!w) return make_error("judge input has an unknown workload \"" + j.at("workload").get<std::string>() + "\"");
      r.workload = *w;
    }
    if (j.contains("agent")) {
      const auto& a = j.at("agent");
      r.agent.context_ceiling_tokens = a.at("context_ceiling").get<int64_t>();
      r.agent.band_tokens = a.at("band_tokens").get<int64_t>();
      r.agent.thinking_share = a.at("thinking_share").get<double>();
      r.agent.preserve_thinking = a.at("preserve_thinking").get<bool>();
      r.agent.tool_every = a.at("tool_every").get<int>();
      r.agent.min_recovery_ratio = a.at("min_recovery_ratio").get<double>();
    }
    r.own_stage_ids = j.value("own_stage_ids", std::vector<int64_t>{});
    floors_from_json(j, r.slo, r.launch_cap);
    if (j.contains("equivalence")) {
      const auto& e = j.at("equivalence");
      EquivalenceRecipe eq;
      eq.rules.max_fork_margin = e.at("max_fork_margin").get<double>();
      eq.rules.kl_factor = e.at("kl_factor").get<double>();
      eq.rules.min_kl = e.at("min_kl").get<double>();
      eq.reference_id = opt_from<int64_t>(e, "reference_id");
      const auto top1 = e.at("top1").get<std::string>();
      if (top1 != "all_prompts" && top1 != "unconstrained_only")
        return make_error("judge input has an unknown equivalence top1 rule \"" + top1 + "\"");
      eq.top1 = top1 == "all_prompts" ? TopOneRule::AllPrompts : TopOneRule::UnconstrainedOnly;
      r.equivalence = eq;
    }
    rows.since_ms = j.at("since_ms").get<int64_t>();
    rows.until_ms = j.at("until_ms").get<int64_t>();
    rows.baseline_since_ms = j.at("baseline_since_ms").get<int64_t>();
    rows.baseline_until_ms = j.at("baseline_until_ms").get<int64_t>();
    const auto& m = j.at("max_ids");
    rows.max_ids.probe = m.at("probe").get<int64_t>();
    rows.max_ids.host_sample = m.at("host_sample").get<int64_t>();
    rows.max_ids.process_sample = m.at("process_sample").get<int64_t>();
    rows.max_ids.event = m.at("event").get<int64_t>();
    rows.max_ids.golden = m.value("golden", int64_t{0});
    return stored;
  } catch (const json::exception& e) {
    return make_error(std::string("judge input is malformed: ") + e.what());
  }
}

}  // namespace soak
