#include "detectors/process_watch.h"

#include <nlohmann/json.hpp>

namespace soak {
namespace {

// Detail rows stay small; long argv tails (paths, prompts) add nothing to "which engine is this".
constexpr size_t kEventCommandChars = 300;

Event make_event(std::optional<int64_t> candidate_id, std::optional<int64_t> host_id, int64_t wall_ms, EventKind kind,
                 const nlohmann::json& detail) {
  Event e;
  e.wall_ms = wall_ms;
  e.candidate_id = candidate_id;
  e.host_id = host_id;
  e.kind = kind;
  e.detail_json = detail.dump();
  return e;
}

}  // namespace

std::optional<ProcessIdentity> identity_of(const ProcessSample& s) {
  if (s.pid <= 0 || !s.start_time) return std::nullopt;
  return ProcessIdentity{s.pid, *s.start_time};
}

bool ProcessSampleKeeper::keep(const ProcessSample& s, bool over_budget) {
  const auto identity = identity_of(s);
  const bool due = !last_ms_ || s.wall_ms - *last_ms_ >= every_ms_ || s.wall_ms < *last_ms_;
  const bool changed = identity != last_identity_ || s.error != last_error_ || over_budget != last_over_budget_;
  if (!due && !changed) return false;
  last_ms_ = s.wall_ms;
  last_identity_ = identity;
  last_error_ = s.error;
  last_over_budget_ = over_budget;
  return true;
}

namespace {
// What a stored host sample must not hide: the judged step series and the error.
bool same_steps(const HostSample& a, const HostSample& b) {
  return a.pressure_level == b.pressure_level && a.memorystatus_level == b.memorystatus_level &&
         a.thermal_level == b.thermal_level && a.swap_used_bytes == b.swap_used_bytes && a.swapouts == b.swapouts &&
         a.error == b.error;
}
}  // namespace

bool HostSampleKeeper::keep(const HostSample& s) {
  const bool due = !last_ || s.wall_ms - last_->wall_ms >= every_ms_ || s.wall_ms < last_->wall_ms;
  if (!due && same_steps(s, *last_)) {
    pending_ = s;
    return false;
  }
  last_ = s;
  pending_.reset();
  return true;
}

std::optional<HostSample> HostSampleKeeper::take_pending() {
  auto p = std::move(pending_);
  pending_.reset();
  if (p) last_ = p;
  return p;
}

std::vector<Event> RestartDetector::observe(std::optional<ProcessIdentity> seen, int64_t wall_ms) {
  std::vector<Event> out;
  if (!seen) {
    if (known_ && !gone_reported_) {
      out.push_back(make_event(candidate_id_, host_id_, wall_ms, EventKind::ProcessGone,
                               {{"pid", known_->pid}, {"start_time", known_->start_time}}));
      gone_reported_ = true;
    }
    return out;
  }
  if (known_ && !(*known_ == *seen)) {
    out.push_back(make_event(candidate_id_, host_id_, wall_ms, EventKind::ProcessRestart,
                             {{"old_pid", known_->pid},
                              {"old_start_time", known_->start_time},
                              {"new_pid", seen->pid},
                              {"new_start_time", seen->start_time}}));
  }
  known_ = seen;
  gone_reported_ = false;
  return out;
}

std::vector<Event> DuplicateEngineDetector::observe(const std::vector<ProcessInfo>& processes,
                                                    std::optional<int> candidate_pid, int64_t wall_ms) {
  std::vector<Event> out;
  current_ = other_engines(processes, candidate_pid, runtimes_);
  std::set<int> present;
  for (const auto& e : current_) {
    present.insert(e.process.pid);
    if (reported_.count(e.process.pid)) continue;
    nlohmann::json d{{"pid", e.process.pid},
                     {"runtime", std::string(to_string(e.kind))},
                     {"command", display_command(e.process, kEventCommandChars)}};
    if (candidate_pid) d["candidate_pid"] = *candidate_pid;
    out.push_back(make_event(candidate_id_, host_id_, wall_ms, EventKind::DuplicateEngine, d));
  }
  reported_ = std::move(present);
  return out;
}

}  // namespace soak
