// The production TaskRunner: runs each scheduled task's probe kinds
// (probe_kinds_for(), schedules/plan.h) with the ProbeEngine on the daemon's
// loop, and stores every row as it finishes — with the task's candidate, host,
// stage, group and task name — before reporting the row ids and outcomes.
//
// Ownership: borrows the engine and the outbox; both must outlive
// it. The TaskRequest's candidate is copied into the engine's run.
// Threading: loop thread only. Contract (campaigns/task_runner.h): `done` exactly
// once per run()/read_build(), never from inside them; in_flight() already
// counts the task out when `done` runs; cancel_all() ends every transfer, the
// rows of requests in flight are stored as cancelled_by_daemon.
// Failure: a row the store cannot take now waits in the Outbox (it is still in
// the report's outcomes); one it refuses for good is logged there.
// Memory: after each probe row and each task the free heap goes back to the
// system (platform/allocator.h) a moment later, once the probe's requests and
// answers (and the campaign's judging of a task) were freed; rows ending
// together share one trim (docs/DESIGN.md §4.10).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <uv.h>

#include "core/uv_util.h"

#include "campaigns/task_runner.h"
#include "probes/engine.h"
#include "storage/outbox.h"

namespace soak {

// How long after a task ends the free heap is handed back: the task's run,
// its exchanges and the judging its completion starts are freed by then, and
// tasks ending together share one trim.
inline constexpr uint64_t kTrimAfterWorkMs = 1'000;

// Runs `trim` once, `delay_ms` after the first soon() since the last run: a
// burst of calls costs one trim and one wakeup.
class DeferredTrim {
 public:
  DeferredTrim(uv_loop_t* loop, uint64_t delay_ms, std::function<void()> trim);
  void soon();

 private:
  Timer timer_;
  uint64_t delay_ms_;
  std::function<void()> trim_;
};

class ProbeTaskRunner final : public TaskRunner {
 public:
  // `trim` (borrowed): asked soon() after each task (null: the free heap is
  // trimmed at once, as the task ends).
  ProbeTaskRunner(probes::ProbeEngine& engine, Outbox& outbox, DeferredTrim* trim = nullptr);

  void run(const TaskRequest& req, std::function<void(TaskReport)> done) override;
  void read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) override;
  void cancel(int64_t work_id) override;
  void cancel_all() override;
  size_t in_flight() const override { return engine_.in_flight(); }
  probes::ServingState serving(const std::string& candidate) const override { return engine_.serving(candidate); }

 private:
  probes::ProbeEngine& engine_;
  Outbox& outbox_;
  std::map<int64_t, probes::RunId> runs_;  // work id -> engine run, while in flight
  DeferredTrim* trim_;
};

}  // namespace soak
