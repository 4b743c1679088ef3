// A group of chat requests released together: N requests started in one loop
// pass (curl sends them back to back) on fresh connections, each a row of its
// own (client concurrency N, one group id); when all have ended, a summary row
// (workload "<members' workload>/summary") carries p50/p95/max, aggregate
// tok/s, the send spread and the FIFO check (engine_rows.h). The burst and the
// capacity probe (docs/DESIGN.md §2.4, §3.9) are both groups; they differ in
// what they send and how they read the summary.
//
// While members wait in the runtime's queue, the group reads the runtime's
// own queue state (probes/queue_watch.h) and tells the HttpClient when it
// moved; the client also counts each slot request it saw served at that
// origin (http_client.h mark_queue_moved). Either gives the members still
// waiting their first-token budget again. The group ends once every member
// and any queue reading in flight has ended.
//
// Threading: the loop thread, like every Step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/uv_util.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/queue_watch.h"

namespace soak::probes {

class GroupStep : public Step {
 public:
  explicit GroupStep(StepEnv env);

 protected:
  struct Group {
    ProbeKind kind = ProbeKind::Burst;
    std::string workload;       // the members'; the summary's is workload + "/summary"
    std::vector<ChatJob> jobs;  // released together; each gets workload, concurrency and a fresh connection
    std::string fixture_hash;   // of the prompt without index and nonce
    std::string sampling_json;
    std::optional<int64_t> size;
  };
  // Called once every member has ended (not after a cancel): fills the
  // summary row's outcome and detail from the summary, which it may annotate.
  using Finalize = std::function<void(BurstSummary&, ProbeResult& summary)>;

  // Releases `g`; `then` runs once every member has ended (after the summary,
  // when there is one). An empty group goes straight to `then`.
  void release(Group g, Finalize finalize, std::function<void()> then);

  // The runtime's parallel slots as known: configured, else as it reports.
  std::optional<int> runtime_slots() const { return env_.cand.slots ? env_.cand.slots : env_.state.runtime_slots; }

 private:
  void on_member(ProbeResult& r, const ExchangeResult& x);
  void on_cancel() override { poll_timer_.stop(); }
  void read_queue();
  void end_if_done();
  void summarize();

  const std::string origin_;  // of the candidate's base URL: where the members queue
  QueueWatch watch_;
  Timer poll_timer_;
  bool poll_live_ = false;
  Exchange* poll_ = nullptr;  // the reading in flight (owned by exchanges_)

  Group group_;
  Finalize finalize_;
  std::function<void()> then_;
  int outstanding_ = 0;
  int64_t started_wall_ms_ = 0;
  int64_t group_id_ = 0;
  std::vector<BurstMember> members_;
  std::string member_hashes_;
};

}  // namespace soak::probes
