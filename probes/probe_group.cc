#include "probes/probe_group.h"

#include <algorithm>

#include "core/hash.h"

namespace soak::probes {

void GroupStep::release(Group g, Finalize finalize, std::function<void()> then) {
  if (g.jobs.empty()) return then();
  group_ = std::move(g);
  finalize_ = std::move(finalize);
  then_ = std::move(then);
  members_.clear();
  member_hashes_.clear();
  outstanding_ = static_cast<int>(group_.jobs.size());
  started_wall_ms_ = env_.io.clock.wall_ms();
  group_id_ = env_.group_id.value_or(started_wall_ms_);
  std::vector<ChatJob> jobs = std::move(group_.jobs);
  group_.jobs.clear();
  // All start in this one call: the same loop pass.
  for (auto& j : jobs) {
    j.workload = group_.workload;
    j.client_concurrency = static_cast<int>(jobs.size());
    j.connection = ConnectionPolicy::Fresh;
    j.fixture_hash = group_.fixture_hash;
    if (group_.size) j.size = group_.size;
    run_chat(std::move(j), [this](ProbeResult& r, const ExchangeResult& x) { on_member(r, x); });
  }
}

void GroupStep::on_member(ProbeResult& r, const ExchangeResult& x) {
  r.group_id = group_id_;
  BurstMember m;
  m.outcome = r.outcome;
  m.start_ns = request_origin_ns(x.transfer.times);
  m.sent_ns = x.transfer.times.connected_ns;
  m.first_token_ns = x.chat.first_token_ns;
  m.last_token_ns = x.chat.last_token_ns;
  m.done_ns = x.transfer.times.done_ns;
  m.completion_tokens = r.completion_tokens
                            ? r.completion_tokens
                            : std::optional<int64_t>(static_cast<int64_t>(x.chat.token_arrivals_ns.size()));
  members_.push_back(m);
  member_hashes_ += r.body_hash;
  // A member the runtime served (it wrote output, or a whole response) freed
  // its slot: the members still waiting in its queue are queued, not stalled,
  // and their budget runs from now. One cut while nothing came moved nothing.
  const bool served = x.chat.first_token_ns.has_value() || x.transfer.reason == EndReason::Completed;
  if (served && outstanding_ > 1) {
    const int64_t now = env_.io.clock.mono_ns();
    for (auto& e : exchanges_)
      if (e && e->live()) e->queue_moved(now);
  }
  emit(std::move(r));
  if (--outstanding_ > 0) return;
  if (!cancelled()) summarize();
  auto then = std::move(then_);
  then_ = nullptr;
  then();
}

void GroupStep::summarize() {
  BurstSummary s = summarize_burst(members_);
  ProbeResult r = row(group_.kind, group_.workload + "/summary");
  r.group_id = group_id_;
  r.client_concurrency = s.n;
  r.size_tokens = group_.size;
  r.started_wall_ms = started_wall_ms_;
  r.sampling_json = group_.sampling_json;
  r.fixture_hash = group_.fixture_hash;
  r.body_hash = hash_hex(member_hashes_);  // the summary's "body" is its members' answers
  r.outcome = Outcome::Clean;
  if (finalize_) finalize_(s, r);
  r.extra_json = s.to_json();
  emit(std::move(r));
}

}  // namespace soak::probes
