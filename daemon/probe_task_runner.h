// The production TaskRunner: runs each scheduled task's probe kinds
// (probe_kinds_for(), schedules/plan.h) with the ProbeEngine on the daemon's
// loop, and stores every row as it finishes — with the task's candidate, host,
// stage, group and task name — before reporting the row ids and outcomes.
//
// Ownership: borrows the engine and the outbox; both must outlive
// it. The TaskRequest's candidate is copied into the engine's run.
// Threading: loop thread only. Contract (daemon/task_runner.h): `done` exactly
// once per run()/read_build(), never from inside them; in_flight() already
// counts the task out when `done` runs; cancel_all() ends every transfer, the
// rows of requests in flight are stored as cancelled_by_daemon.
// Failure: a row the store cannot take now waits in the Outbox (it is still in
// the report's outcomes); one it refuses for good is logged there.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/outbox.h"
#include "daemon/task_runner.h"
#include "probes/engine.h"

namespace soak {

class ProbeTaskRunner final : public TaskRunner {
 public:
  ProbeTaskRunner(probes::ProbeEngine& engine, Outbox& outbox);

  void run(const TaskRequest& req, std::function<void(TaskReport)> done) override;
  void read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) override;
  void cancel(int64_t work_id) override;
  void cancel_all() override;
  size_t in_flight() const override { return engine_.in_flight(); }

 private:
  probes::ProbeEngine& engine_;
  Outbox& outbox_;
  std::map<int64_t, probes::RunId> runs_;  // work id -> engine run, while in flight
};

}  // namespace soak
