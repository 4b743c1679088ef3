#include "schedules/plan.h"

#include <algorithm>
#include <array>
#include <utility>

namespace soak {

namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

StagePlan plan_for(StageKind stage, const CampaignSettings& s, WorkloadKind workload, Warmup warmup) {
  const Cadences& c = s.cadence;
  auto periodic = [](TaskKind k, int64_t every, Weight w = Weight::Light) {
    return TaskSpec{k, Repeat::Periodic, every, 0, w};
  };
  StagePlan p;
  p.stage = stage;
  switch (stage) {
    case StageKind::Smoke: p.tasks = {TaskSpec{TaskKind::Smoke, Repeat::Once, 0, 0, Weight::Light}}; break;
    case StageKind::Canary:
      p.tasks = {periodic(TaskKind::Scrape, c.scrape_ms), periodic(TaskKind::Functional, c.functional_ms),
                 periodic(TaskKind::LongContext, c.long_context_ms, Weight::Heavy),
                 periodic(TaskKind::Burst, c.burst_ms, Weight::Heavy), periodic(TaskKind::Cancel, c.cancel_ms),
                 // Concurrent long prompts: as often as the long-context sizes, heavy as they are.
                 periodic(TaskKind::Capacity, c.long_context_ms, Weight::Heavy),
                 // Cold, warm and prefix turns, as often as the functional checks;
                 // heavy so that no burst or long prefill shares the runtime with
                 // the times to first token it compares (nor it with a burst's FIFO check).
                 periodic(TaskKind::PrefixReuse, c.functional_ms, Weight::Heavy)};
      // Last, so the heartbeat keeps its index; Opening makes it run first.
      if (warmup == Warmup::Opening)
        p.tasks.push_back(TaskSpec{TaskKind::Warmup, Repeat::Opening, 0, 0, Weight::Heavy});
      // The golden set at the start (after the warm-up: the weights paged in)
      // and at the end: the build against itself is the noise floor.
      if (s.equivalence.enabled == EquivalenceSwitch::On) {
        p.tasks.push_back(TaskSpec{TaskKind::GoldenStart, Repeat::Opening, 0, 0, Weight::Heavy});
        p.tasks.push_back(TaskSpec{TaskKind::GoldenEnd, Repeat::Closing, 0, 0, Weight::Heavy});
      }
      p.heartbeat = 0;
      break;
    case StageKind::Gate:
      p.tasks = {periodic(TaskKind::Scrape, c.scrape_ms),
                 TaskSpec{TaskKind::Agent, Repeat::Continuous, 0, c.gate_pause_ms, Weight::Light},
                 // Enough rounds of every long-context size for the comparison
                 // with the baseline by the gate's end (docs/DESIGN.md §3.5).
                 periodic(TaskKind::LongContext, c.gate_long_context_ms, Weight::Heavy)};
      p.heartbeat = 0;
      break;
    case StageKind::Soak:
      p.tasks = {periodic(TaskKind::Scrape, c.scrape_ms), periodic(TaskKind::SoakTraffic, c.soak_traffic_ms),
                 periodic(TaskKind::LongContext, c.soak_heavy_ms, Weight::Heavy),
                 periodic(TaskKind::Burst, c.soak_heavy_ms, Weight::Heavy),
                 periodic(TaskKind::Capacity, c.soak_heavy_ms, Weight::Heavy)};
      // Drift over the week: the golden set again, against the canary's runs.
      if (s.equivalence.enabled == EquivalenceSwitch::On)
        p.tasks.push_back(TaskSpec{TaskKind::GoldenEnd, Repeat::Closing, 0, 0, Weight::Heavy});
      p.heartbeat = 0;
      break;
  }
  // The heartbeat (scrape) is first and runs for every workload, so dropping
  // later tasks keeps its index.
  std::erase_if(p.tasks, [workload](const TaskSpec& t) { return probe_kinds_for(t.kind, workload).empty(); });
  return p;
}

DueSet next_due(const StagePlan& plan, const std::vector<TaskState>& states, int64_t stage_started_ms, int64_t now_ms,
                HeavyGate heavy) {
  DueSet out;
  auto wake = [&](int64_t t) {
    if (!out.next_wake_ms || t < *out.next_wake_ms) out.next_wake_ms = t;
  };
  const int64_t elapsed = std::max<int64_t>(0, now_ms - stage_started_ms);
  // An opening task not yet ended holds everything but the heartbeat (it is
  // heavy: alone on the host; the heartbeat's health and scrape send no
  // inference request). The heartbeat goes on reading the runtime's health
  // while the opening task waits for another candidate's heavy work (a wait
  // of an hour must not leave the stage without one) and while it runs (the
  // golden set's run takes minutes on a slow build).
  bool held_opening = false;
  std::optional<Due> opening;
  for (size_t i = 0; i < plan.tasks.size() && i < states.size(); ++i) {
    if (plan.tasks[i].repeat != Repeat::Opening || states[i].runs > 0) continue;
    held_opening = true;
    if (states[i].running) break;  // its completion wakes the scheduler
    if (heavy == HeavyGate::Free)
      opening = Due{i, 0};
    else
      out.held.push_back(i);
    break;
  }
  std::vector<Due> heavy_due;
  for (size_t i = 0; i < plan.tasks.size() && i < states.size(); ++i) {
    const TaskSpec& t = plan.tasks[i];
    const TaskState& st = states[i];
    if (st.running) continue;  // its completion wakes the scheduler
    bool is_due = false;
    int64_t slot = 0;
    switch (t.repeat) {
      case Repeat::Closing: continue;  // closing_due() serves it at the stage's end
      case Repeat::Opening:            // it ran (above): never again
      case Repeat::Once:
        is_due = st.runs == 0;
        slot = 0;
        break;
      case Repeat::Periodic: {
        if (t.every_ms <= 0) break;
        slot = floor_div(elapsed, t.every_ms);
        is_due = !st.last_slot || *st.last_slot < slot;
        if (!is_due) wake(stage_started_ms + (slot + 1) * t.every_ms);
        break;
      }
      case Repeat::Continuous: {
        int64_t ready = st.last_end_ms ? *st.last_end_ms + t.pause_ms : stage_started_ms;
        is_due = now_ms >= ready;
        slot = st.runs;
        if (!is_due) wake(ready);
        break;
      }
    }
    if (!is_due) continue;
    if (held_opening && i != plan.heartbeat) {
      // Held by the opening task, heavy as it is: heavy work counts the wait
      // (a stage whose heavy work never ran is extended to make it up, §3.7);
      // the rest just waits.
      if (t.weight == Weight::Heavy && t.repeat != Repeat::Opening) out.held.push_back(i);
      continue;
    }
    if (t.weight == Weight::Heavy) {
      heavy_due.push_back(Due{i, slot});  // one heavy task at a time: chosen below
      continue;
    }
    out.due.push_back(Due{i, slot});
  }
  if (opening) {
    auto pos = std::find_if(out.due.begin(), out.due.end(), [&](const Due& d) { return d.task > opening->task; });
    out.due.insert(pos, *opening);  // the due list stays in plan order
  }
  if (heavy_due.empty()) return out;
  // The heavy task that has waited longest goes first; a task not yet held
  // became due now. Plan order among equals.
  auto since = [&](const Due& d) { return states[d.task].waiting_since_ms.value_or(now_ms); };
  auto first = heavy_due.begin();
  for (auto it = heavy_due.begin(); it != heavy_due.end(); ++it)
    if (since(*it) < since(*first)) first = it;
  for (auto it = heavy_due.begin(); it != heavy_due.end(); ++it) {
    if (it == first && heavy == HeavyGate::Free) {
      auto pos = std::find_if(out.due.begin(), out.due.end(), [&](const Due& d) { return d.task > it->task; });
      out.due.insert(pos, *it);  // the due list stays in plan order
    } else {
      out.held.push_back(it->task);
    }
  }
  return out;
}

std::optional<size_t> closing_due(const StagePlan& plan, const std::vector<TaskState>& states) {
  for (size_t i = 0; i < plan.tasks.size() && i < states.size(); ++i)
    if (plan.tasks[i].repeat == Repeat::Closing && states[i].runs == 0 && !states[i].running) return i;
  return std::nullopt;
}

void mark_started(std::vector<TaskState>& states, const Due& d, int64_t now_ms) {
  TaskState& st = states.at(d.task);
  st.running = true;
  st.last_slot = d.slot;
  if (st.waiting_since_ms) {
    const int64_t w = std::max<int64_t>(0, now_ms - *st.waiting_since_ms);
    st.waited_ms += w;
    st.longest_wait_ms = std::max(st.longest_wait_ms, w);
    st.waiting_since_ms.reset();
  }
}

void mark_held(std::vector<TaskState>& states, const std::vector<size_t>& held, int64_t now_ms) {
  for (size_t i : held) {
    TaskState& st = states.at(i);
    if (st.waiting_since_ms) continue;
    st.waiting_since_ms = now_ms;
    ++st.waits;
  }
}

void mark_finished(std::vector<TaskState>& states, size_t task, int64_t now_ms) {
  TaskState& st = states.at(task);
  st.running = false;
  st.runs += 1;
  st.last_end_ms = now_ms;
}

int64_t nominal_slots(const TaskSpec& t, int64_t length_ms) {
  if (t.repeat != Repeat::Periodic || t.every_ms <= 0) return 1;
  return std::max<int64_t>(1, length_ms / t.every_ms);
}

double coverage(const StagePlan& plan, const std::vector<TaskState>& states, int64_t length_ms) {
  if (!plan.heartbeat || *plan.heartbeat >= states.size()) return 1.0;
  const TaskSpec& hb = plan.tasks[*plan.heartbeat];
  double c = static_cast<double>(states[*plan.heartbeat].runs) / static_cast<double>(nominal_slots(hb, length_ms));
  return std::min(1.0, c);
}

StageClock stage_clock(const StageRow& stage, double cov, double min_coverage, int64_t now_ms) {
  if (now_ms < stage.started_ms + stage.length_ms) return StageClock::Running;
  if (cov >= min_coverage) return StageClock::Complete;
  if (now_ms < stage.deadline_ms) return StageClock::Extended;
  return StageClock::DeadlineHit;
}

int64_t stage_deadline(int64_t started_ms, int64_t length_ms, double grace_fraction) {
  return started_ms + length_ms + static_cast<int64_t>(static_cast<double>(length_ms) * grace_fraction);
}

int64_t next_window_start(int64_t now_ms, const std::string& window, int utc_offset_minutes) {
  if (window == "now" || window.size() != 5) return now_ms;
  const int64_t minute_of_day =
      (window[0] - '0') * 600 + (window[1] - '0') * 60 + (window[3] - '0') * 10 + (window[4] - '0');
  const int64_t offset_ms = static_cast<int64_t>(utc_offset_minutes) * kMinute;
  const int64_t local = now_ms + offset_ms;
  const int64_t day_start = floor_div(local, kDay) * kDay;
  int64_t candidate = day_start + minute_of_day * kMinute;
  if (candidate > local) candidate -= kDay;                       // the latest window start <= now
  if (local < candidate + kNightlyWindowLengthMs) return now_ms;  // inside it: go
  return candidate + kDay - offset_ms;                            // else the next one
}

}  // namespace soak
