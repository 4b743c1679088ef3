// The seam between campaigns (what to run, when) and probes (how to run it).
//
// A TaskRunner executes one scheduled task against one candidate — a smoke
// pass, a functional cycle, a long-context sweep, a burst, an agent turn —
// writes every probe result to the store as it finishes, and then reports the
// row ids and outcomes. The production runner drives libcurl on the daemon's
// libuv loop; tests use a scripted runner in virtual time.
//
// Threading: all calls and callbacks on the loop thread. `done` is called
// exactly once per run(), never from inside run() itself, also after
// cancel_all() (with the rows recorded as cancelled_by_daemon). The same holds
// for read_build(). A runner never throws.
// Ownership: a TaskRequest holds its candidate's config (a CandidateSnapshot),
// so a run keeps the config it started with across a reload; read_build()
// copies what it needs of the candidate before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"
#include "core/types.h"
#include "probes/engine.h"
#include "schedules/plan.h"

namespace soak {

struct TaskRequest {
  int64_t work_id = 0;
  CandidateSnapshot candidate;  // keeps its config snapshot alive
  int64_t candidate_id = 0;     // store row of candidate x build
  int64_t host_id = 0;
  std::optional<int64_t> stage_id;  // nullopt: a baseline run interleaved with another's stage
  StageKind stage = StageKind::Smoke;
  TaskKind task = TaskKind::Scrape;
  std::optional<int64_t> group_id;  // pairs candidate and interleaved baseline runs
  // The candidate row's launch fingerprint model (file, digest or key): the
  // identity probe fails when other weights serve now (probes::RunSpec).
  std::string expect_model;
};

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  virtual void run(const TaskRequest& req, std::function<void(TaskReport)> done) = 0;
  // Reads the candidate's build identity (HTTP field, version command or fixed).
  virtual void read_build(const CandidateConfig& c, std::function<void(Result<probes::BuildIdentity>)> done) = 0;
  // Cancels one run (e.g. its stage hit its deadline); its `done` still fires,
  // with the requests in flight recorded as cancelled_by_daemon. Unknown ids
  // are ignored.
  virtual void cancel(int64_t work_id) = 0;
  // Cancels everything in flight; each pending `done` still fires.
  virtual void cancel_all() = 0;
  virtual size_t in_flight() const = 0;
  // The inference requests of the candidate named `candidate` in flight now,
  // and how long ago any of them was last served: what the liveness rule
  // watches on every tick (campaigns/liveness.h). A runner that cannot tell
  // reports nothing outstanding.
  virtual probes::ServingState serving(const std::string& /*candidate*/) const { return {}; }
};

}  // namespace soak
