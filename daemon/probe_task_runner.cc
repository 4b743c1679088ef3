#include "daemon/probe_task_runner.h"

#include <memory>
#include <string>
#include <utility>

#include "platform/allocator.h"

namespace soak {

namespace {

std::string summary(const TaskReport& r, size_t unwritten) {
  size_t clean = 0;
  for (Outcome o : r.outcomes) clean += o == Outcome::Clean ? 1 : 0;
  std::string s = std::to_string(r.outcomes.size()) + " row(s), " + std::to_string(clean) + " clean";
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    if (r.outcomes[i] == Outcome::Clean) continue;
    s += "; first " + std::string(to_string(r.outcomes[i])) + " at " + std::string(to_string(r.kinds[i]));
    break;
  }
  if (unwritten) s += "; " + std::to_string(unwritten) + " row(s) not written yet (store paused)";
  return s;
}

}  // namespace

DeferredTrim::DeferredTrim(uv_loop_t* loop, uint64_t delay_ms, std::function<void()> trim)
    : timer_(loop), delay_ms_(delay_ms), trim_(std::move(trim)) {}

void DeferredTrim::soon() {
  if (timer_.active()) return;
  timer_.start(delay_ms_, 0, [this] { trim_(); });
}

ProbeTaskRunner::ProbeTaskRunner(probes::ProbeEngine& engine, Outbox& outbox, DeferredTrim* trim)
    : engine_(engine), outbox_(outbox), trim_(trim) {}

void ProbeTaskRunner::run(const TaskRequest& req, std::function<void(TaskReport)> done) {
  struct State {
    TaskReport report;
    size_t unwritten = 0;  // waiting in the outbox, or refused for good (logged there)
  };
  auto st = std::make_shared<State>();
  probes::RunSpec spec{probe_kinds_for(req.task, req.candidate ? req.candidate->kind : WorkloadKind::Chat),
                       req.group_id, req.expect_model};
  const int64_t candidate_id = req.candidate_id, host_id = req.host_id;
  const std::optional<int64_t> stage_id = req.stage_id;
  const std::string task(to_string(req.task));
  if (!req.candidate) {
    // Nothing to probe; still answer on a later pass, as the contract says.
    CandidateConfig none;
    none.name = "(none)";
    engine_.run(none, probes::RunSpec{}, nullptr, [done] { done(TaskReport{{}, {}, {}, "no candidate given"}); });
    return;
  }
  const int64_t work_id = req.work_id;
  runs_[work_id] = engine_.run(
      *req.candidate, std::move(spec),
      [this, st, candidate_id, host_id, stage_id, task](ProbeResult r) {
        r.candidate_id = candidate_id;
        r.host_id = host_id;
        r.stage_id = stage_id;
        r.task = task;
        st->report.outcomes.push_back(r.outcome);
        st->report.kinds.push_back(r.kind);
        if (const auto id = outbox_.put(std::move(r)))
          st->report.row_ids.push_back(*id);
        else
          ++st->unwritten;
        // A task runs for minutes, probe after probe: what each probe's
        // requests took goes back as it ends, not when the whole task does.
        if (trim_) trim_->soon();
      },
      [this, st, done, work_id] {
        runs_.erase(work_id);
        st->report.detail = summary(st->report, st->unwritten);
        done(std::move(st->report));
        // What the task's requests and answers took goes back to the system,
        // not kept until the heap's next shrink (docs/DESIGN.md §4.10).
        if (trim_)
          trim_->soon();
        else
          trim_free_memory();
      });
}

void ProbeTaskRunner::read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) {
  engine_.read_build(c, std::move(done));
}

void ProbeTaskRunner::cancel(int64_t work_id) {
  auto it = runs_.find(work_id);
  if (it != runs_.end()) engine_.cancel(it->second);
}

void ProbeTaskRunner::cancel_all() { engine_.cancel_all(); }

}  // namespace soak
