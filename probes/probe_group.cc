#include "probes/probe_group.h"

#include <algorithm>

#include "core/hash.h"

namespace soak::probes {

GroupStep::GroupStep(StepEnv env)
    : Step(std::move(env)), origin_(origin_of(env_.cand.base_url)), watch_(env_.runtime), poll_timer_(env_.io.loop) {}

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
  const auto every = static_cast<uint64_t>(queue_poll_ms(env_.cand.settings.limits.stall_timeout_ms));
  if (watch_.route()) poll_timer_.start(every, every, [this] { read_queue(); });
}

void GroupStep::read_queue() {
  // Only while a member waits for its first token; one reading at a time.
  if (poll_live_ || cancelled() || env_.io.http.queued(origin_) == 0 || !watch_.route()) return;
  drop_finished_exchanges();  // the timer's callback: no exchange is running
  poll_live_ = true;
  poll_ = &send(route(*watch_.route()), [this](const ExchangeResult& x) {
    poll_live_ = false;
    poll_ = nullptr;
    if (watch_.on_answer(x.transfer.head.status, x.transfer.body))
      env_.io.http.mark_queue_moved(origin_, env_.io.clock.mono_ns());
    if (!watch_.route()) poll_timer_.stop();
    end_if_done();
  });
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
  emit(std::move(r));
  if (--outstanding_ > 0) return;
  poll_timer_.stop();
  // A reading still in flight has nothing left to tell: its end ends the group.
  if (poll_live_ && poll_) poll_->cancel();
  end_if_done();
}

void GroupStep::end_if_done() {
  if (outstanding_ > 0 || poll_live_ || !then_) return;
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
