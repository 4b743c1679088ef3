// Per-workload rules in the gate and the soak (docs/DESIGN.md §3.9): long
// context per size and capacity per size x concurrency, judged round by round.
//
// The canary rejects on any non-clean long-context or capacity row
// (judges/context.cc). The soak runs them every 6 h: a 131K fresh prompt that
// fails on every round is ~28 rows among ~14K, far under the 1 % failure
// ratio, and the candidate would promote though the seeds require 131K fresh
// to pass again before promotion (S1:197). So, per size (and per capacity
// entry), the stage's rows are taken as rounds:
//   - the last round must be clean: what the candidate is promoted with is what
//     it does now;
//   - a size failing on more than one round rejects, whatever the pooled ratio
//     says: one failed round among clean ones is counted as any failure.
// A long-context round is one fresh request and the exact repeat that follows
// it (the probe sends one fresh per size and run); a capacity round is one
// released group (its members share a group id). A refusal beyond the
// runtime's own context is a hold, as in the canary.
#include <map>

#include "judges/internal.h"

namespace soak::judge_detail {

namespace {

// S1:197: "131K fresh must pass again before promotion"; more than one failed
// round rejects.
constexpr int64_t kMaxFailedRounds = 1;

struct Round {
  std::vector<const ProbeResult*> rows;
  const ProbeResult* failed = nullptr;  // first row failing within the runtime's context
  bool out_of_reach = false;
};

std::string round_rows(const Round& r) {
  std::vector<int64_t> ids;
  for (const ProbeResult* x : r.rows) ids.push_back(x->id);
  return id_list(ids);
}

std::string failure_text(const ProbeResult& r) {
  std::string s = format("%s %s (row %lld)", std::string(to_string(r.cache_state)).c_str(),
                         std::string(to_string(r.outcome)).c_str(), static_cast<long long>(r.id));
  if (!r.detail.empty()) s += ": " + r.detail;
  return s;
}

void note(Round& round, const ProbeResult& r, std::optional<int64_t> stage_ctx) {
  round.rows.push_back(&r);
  if (!counts_against(r)) return;
  if (beyond_reach(r, stage_ctx))
    round.out_of_reach = true;
  else if (!round.failed)
    round.failed = &r;
}

void judge_rounds_of(Judgement& j, const std::string& name, const std::string& what, const std::vector<Round>& rounds) {
  if (rounds.empty()) return;
  int64_t failed = 0, beyond = 0;
  const Round* first_failed = nullptr;
  for (const Round& r : rounds) {
    if (r.failed) {
      ++failed;
      if (!first_failed) first_failed = &r;
    } else if (r.out_of_reach) {
      ++beyond;
    }
  }
  const Round& last = rounds.back();
  const auto n = static_cast<int64_t>(rounds.size());
  std::string counts =
      format("%lld of %lld rounds clean", static_cast<long long>(n - failed - beyond), static_cast<long long>(n));
  auto m = metric(name, MetricResult::Pass, counts);
  m.n = n;
  set_numbers(m, static_cast<double>(n - failed - beyond), 0, 0, 0, static_cast<double>(kMaxFailedRounds), 1);
  if (last.failed) {
    m.result = MetricResult::Fail;
    m.reason = format(
        "%s; the last round (rows %s) was not clean: %s; the last round at every size must be clean "
        "before a promotion (S1:197: 131K fresh must pass again before promotion)",
        counts.c_str(), round_rows(last).c_str(), failure_text(*last.failed).c_str());
    j.find(Severity::Failure, what + ": " + m.reason);
  } else if (failed > kMaxFailedRounds) {
    m.result = MetricResult::Fail;
    m.reason = format(
        "%s; failed on %lld rounds, first %s; a size failing on more than %lld round rejects whatever "
        "the pooled ratio says (S1:197)",
        counts.c_str(), static_cast<long long>(failed), failure_text(*first_failed->failed).c_str(),
        static_cast<long long>(kMaxFailedRounds));
    j.find(Severity::Failure, what + ": " + m.reason);
  } else if (last.out_of_reach) {
    m.result = MetricResult::Marginal;
    m.reason = counts + "; the last round was refused as longer than the runtime's own context";
    j.find(Severity::Hold, what + " is beyond the runtime's own context");
  } else if (failed == 1) {
    m.reason = format("%s; one earlier round failed (%s), counted in the failure ratio; the last round is clean",
                      counts.c_str(), failure_text(*first_failed->failed).c_str());
  }
  j.add(std::move(m));
}

void long_context_rounds(const Context& c, Judgement& j, std::optional<int64_t> stage_ctx) {
  std::map<int64_t, std::vector<Round>> by_size;
  for (const ProbeResult* r : c.cand) {
    if (r->kind != ProbeKind::LongContext || !r->size_tokens || is_harness(*r)) continue;
    auto& rounds = by_size[*r->size_tokens];
    // A fresh request opens a round; its exact repeat belongs to it.
    if (r->cache_state != CacheState::Repeat || rounds.empty()) rounds.emplace_back();
    note(rounds.back(), *r, stage_ctx);
  }
  for (const auto& [size, rounds] : by_size)
    judge_rounds_of(j, "long_context/" + std::to_string(size), "long context " + size_label(size), rounds);
}

void capacity_rounds(const Context& c, Judgement& j, std::optional<int64_t> stage_ctx) {
  // Per (size, concurrency), the groups in the order they were released.
  std::map<std::pair<int64_t, int>, std::vector<Round>> by_entry;
  std::map<std::pair<int64_t, int>, std::map<int64_t, size_t>> index;  // group id -> round
  for (const ProbeResult* r : c.cand) {
    if (r->kind != ProbeKind::Capacity || !r->size_tokens || is_group_summary(*r) || is_harness(*r)) continue;
    const auto key = std::make_pair(*r->size_tokens, r->client_concurrency);
    auto& rounds = by_entry[key];
    const int64_t group = r->group_id.value_or(r->started_wall_ms);
    auto [it, added] = index[key].try_emplace(group, rounds.size());
    if (added) rounds.emplace_back();
    note(rounds[it->second], *r, stage_ctx);
  }
  for (const auto& [key, rounds] : by_entry)
    judge_rounds_of(j, format("capacity/%lldx%d", static_cast<long long>(key.first), key.second),
                    "capacity " + size_label(key.first) + " x " + std::to_string(key.second), rounds);
}

}  // namespace

void judge_rounds(const Context& c, Judgement& j) {
  const auto stage_ctx = context_reach(c.in.candidate_rows, {}).runtime_ctx_tokens;
  long_context_rounds(c, j, stage_ctx);
  capacity_rounds(c, j, stage_ctx);
}

}  // namespace soak::judge_detail
