// The canary's long-context gate and the context reach (docs/DESIGN.md §3.9).
//
// The field reports promote only after every size passes fresh (S1: "100K
// fresh is its own gate"; "131K fresh must pass again before promotion"), so
// in the canary every configured size must be served clean, fresh and exact
// repeat. A non-clean long-context row rejects, whatever its class, with one
// exception: the runtime refusing a prompt longer than its own context
// (context_exceeded where the runtime's per-slot context does not exceed the
// prompt). That is not a fault of the build but a launch setting (-c,
// --max-model-len): the verdict is hold, naming how far the build reaches.
#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "judges/internal.h"

namespace soak {

namespace {

// What a long-context row says about the runtime's context (its extra_json,
// written by probes/probe_long_context.cc).
struct RowContext {
  std::optional<int64_t> runtime_ctx;
  std::string source;
  std::optional<int64_t> n_prompt_tokens;  // from a context_exceeded error
};

RowContext row_context(const ProbeResult& r) {
  RowContext c;
  auto j = nlohmann::json::parse(r.extra_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return c;
  auto int_of = [&](const char* key) -> std::optional<int64_t> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  c.runtime_ctx = int_of("runtime_ctx");
  c.n_prompt_tokens = int_of("n_prompt_tokens");
  if (auto it = j.find("runtime_ctx_source"); it != j.end() && it->is_string()) c.source = it->get<std::string>();
  return c;
}

bool is_long_context(const ProbeResult& r) { return r.kind == ProbeKind::LongContext && r.size_tokens.has_value(); }

std::vector<int64_t> sorted_sizes(const std::vector<int64_t>& sizes) {
  std::set<int64_t> s(sizes.begin(), sizes.end());
  return {s.begin(), s.end()};
}

}  // namespace

std::string size_label(int64_t tokens) {
  if (tokens < 1000) return std::to_string(tokens);
  return std::to_string(tokens / 1000) + "K";
}

ContextReach context_reach(const std::vector<ProbeResult>& rows, const std::vector<int64_t>& sizes) {
  ContextReach out;
  const auto sorted = sorted_sizes(sizes);
  if (!sorted.empty()) out.configured_tokens = sorted.back();
  // The latest row that says wins: a runtime relaunched with another -c mid-stage
  // is judged on what it says now. Ties in time are broken by id.
  const ProbeResult* latest = nullptr;
  for (const auto& r : rows) {
    if (!is_long_context(r)) continue;
    if (r.outcome == Outcome::Clean && r.cache_state == CacheState::Fresh &&
        std::find(sorted.begin(), sorted.end(), *r.size_tokens) != sorted.end())
      out.reach_tokens = std::max(out.reach_tokens, *r.size_tokens);
    if (!row_context(r).runtime_ctx) continue;
    if (!latest || r.started_wall_ms > latest->started_wall_ms ||
        (r.started_wall_ms == latest->started_wall_ms && r.id > latest->id))
      latest = &r;
  }
  if (latest) {
    RowContext c = row_context(*latest);
    out.runtime_ctx_tokens = c.runtime_ctx;
    out.runtime_ctx_source = c.source;
  }
  return out;
}

std::optional<ContextReach> judged_context_reach(const JudgeInput& in) {
  const JudgeRecipe& r = in.recipe;
  if (r.stage != StageKind::Canary || r.long_context_sizes.empty()) return std::nullopt;
  ContextReach reach = context_reach(in.candidate_rows, r.long_context_sizes);
  reach.candidate_id = r.candidate_id;
  reach.stage_id = r.stage_id;
  reach.wall_ms = r.now_ms;
  return reach;
}

namespace judge_detail {

namespace {

std::string runtime_ctx_text(const ContextReach& reach) {
  if (!reach.runtime_ctx_tokens) return "runtime context not reported";
  return format("runtime context %lld per slot, from %s", static_cast<long long>(*reach.runtime_ctx_tokens),
                reach.runtime_ctx_source.empty() ? "the runtime" : reach.runtime_ctx_source.c_str());
}

}  // namespace

// Beyond the runtime's own context: context_exceeded where the runtime's
// per-slot context (as the row, else the stage, knew it) does not exceed the
// prompt.
bool beyond_reach(const ProbeResult& r, std::optional<int64_t> stage_ctx) {
  if (r.outcome != Outcome::ContextExceeded || !r.size_tokens) return false;
  const RowContext rc = row_context(r);
  const auto ctx = rc.runtime_ctx ? rc.runtime_ctx : stage_ctx;
  const int64_t need = std::max({*r.size_tokens, rc.n_prompt_tokens.value_or(0), r.prompt_tokens.value_or(0)});
  return ctx && *ctx <= need;
}

// Canary: every capacity member (N long prompts at once) must complete clean;
// one group per (size, concurrency). A refusal beyond the runtime's own
// context is a hold, as for the long-context sizes.
void judge_capacity(const Context& c, Judgement& j) {
  struct Group {
    int64_t n = 0, clean = 0;
    const ProbeResult* failed = nullptr;
    bool out_of_reach = false;
  };
  std::map<std::pair<int64_t, int>, Group> groups;
  const auto stage_ctx = context_reach(c.in.candidate_rows, {}).runtime_ctx_tokens;
  for (const ProbeResult* r : c.cand) {
    if (r->kind != ProbeKind::Capacity || !r->size_tokens || is_group_summary(*r) || is_harness(*r)) continue;
    Group& g = groups[{*r->size_tokens, r->client_concurrency}];
    ++g.n;
    if (is_clean(*r)) ++g.clean;
    if (!counts_against(*r)) continue;
    if (beyond_reach(*r, stage_ctx))
      g.out_of_reach = true;
    else if (!g.failed)
      g.failed = r;
  }
  for (const auto& [key, g] : groups) {
    const std::string label = size_label(key.first) + " x " + std::to_string(key.second);
    auto m = metric(
        format("capacity/%lldx%d", static_cast<long long>(key.first), key.second), MetricResult::Pass,
        format("%lld of %lld concurrent prompts clean", static_cast<long long>(g.clean), static_cast<long long>(g.n)));
    m.n = g.n;
    set_numbers(m, static_cast<double>(g.clean), 0, 0, 0, static_cast<double>(g.n), 1);
    if (g.failed) {
      m.result = MetricResult::Fail;
      m.reason += format("; first failure %s (row %lld)", std::string(to_string(g.failed->outcome)).c_str(),
                         static_cast<long long>(g.failed->id));
      if (!g.failed->detail.empty()) m.reason += ": " + g.failed->detail;
      j.find(Severity::Failure, "capacity " + label + ": " + m.reason);
    } else if (g.out_of_reach) {
      m.result = MetricResult::Marginal;
      m.reason += "; refused as longer than the runtime's own context";
      j.find(Severity::Hold, "capacity " + label + " is beyond the runtime's own context");
    }
    j.add(std::move(m));
  }
}

// Canary only; a recipe without configured sizes (stored before this rule)
// requires nothing.
void judge_long_context(const Context& c, Judgement& j) {
  const auto judged = judged_context_reach(c.in);
  if (!judged) return;
  const ContextReach& reach = *judged;
  const auto sizes = sorted_sizes(c.in.recipe.long_context_sizes);
  std::vector<int64_t> beyond;  // sizes the runtime's own context cannot hold
  for (int64_t size : sizes) {
    int64_t fresh = 0, fresh_clean = 0, repeat = 0, repeat_clean = 0;
    const ProbeResult* failed = nullptr;
    bool out_of_reach = false;
    for (const ProbeResult* r : c.cand) {
      if (!is_long_context(*r) || *r->size_tokens != size || is_harness(*r)) continue;
      const bool is_fresh = r->cache_state == CacheState::Fresh;
      (is_fresh ? fresh : repeat) += 1;
      if (is_clean(*r)) (is_fresh ? fresh_clean : repeat_clean) += 1;
      if (!counts_against(*r)) continue;
      if (beyond_reach(*r, reach.runtime_ctx_tokens))
        out_of_reach = true;
      else if (!failed)
        failed = r;
    }
    const std::string name = "long_context/" + std::to_string(size);
    const std::string counts =
        format("fresh %lld of %lld clean, repeat %lld of %lld clean", static_cast<long long>(fresh_clean),
               static_cast<long long>(fresh), static_cast<long long>(repeat_clean), static_cast<long long>(repeat));
    auto m = metric(name, MetricResult::Pass, counts);
    m.n = fresh + repeat;
    set_numbers(m, static_cast<double>(fresh_clean + repeat_clean), 0, 0, 0, static_cast<double>(fresh + repeat), 1);
    if (failed) {
      m.result = MetricResult::Fail;
      m.reason = format("%s; first failure %s %s (row %lld)", counts.c_str(),
                        std::string(to_string(failed->cache_state)).c_str(),
                        std::string(to_string(failed->outcome)).c_str(), static_cast<long long>(failed->id));
      if (!failed->detail.empty()) m.reason += ": " + failed->detail;
      j.find(Severity::Failure, "long context " + size_label(size) + ": " + m.reason);
    } else if (out_of_reach) {
      m.result = MetricResult::Marginal;
      m.reason = counts + "; refused as longer than the runtime's own context";
      beyond.push_back(size);
    } else if (fresh_clean == 0 || repeat_clean == 0) {
      m.result = MetricResult::Insufficient;
      m.reason = counts + "; every size must be served clean fresh and repeat";
      j.find(Severity::Inconclusive, "long context " + size_label(size) + ": " + m.reason);
    }
    j.add(std::move(m));
  }

  const std::string text =
      "context reach " + size_label(reach.reach_tokens) + ", configured " + size_label(reach.configured_tokens);
  auto m = metric("context_reach",
                  reach.reach_tokens >= reach.configured_tokens ? MetricResult::Pass : MetricResult::Marginal,
                  text + " (" + runtime_ctx_text(reach) + ")");
  m.n = static_cast<int64_t>(sizes.size());
  set_numbers(m, static_cast<double>(reach.reach_tokens), static_cast<double>(reach.runtime_ctx_tokens.value_or(0)), 0,
              0, static_cast<double>(reach.configured_tokens), 1);
  j.add(std::move(m));
  if (!beyond.empty()) {
    std::string sizes_text;
    for (size_t i = 0; i < beyond.size(); ++i) sizes_text += (i ? ", " : "") + size_label(beyond[i]);
    j.find(Severity::Hold, text + " (" + runtime_ctx_text(reach) + "; " + sizes_text + " exceed it)");
  }
}

}  // namespace judge_detail
}  // namespace soak
