#include "schedules/heavy_waits.h"

#include <algorithm>
#include <map>
#include <string_view>

#include <nlohmann/json.hpp>

namespace soak {
namespace {

constexpr std::string_view kWaitBegan = "began", kWaitEnded = "ended";

}  // namespace

std::string heavy_wait_detail(TaskKind task, WaitPhase phase, StageKind stage, int64_t stage_id) {
  nlohmann::json d;
  d["task"] = to_string(task);
  d["wait"] = phase == WaitPhase::Began ? kWaitBegan : kWaitEnded;
  d["stage"] = to_string(stage);
  d["stage_id"] = stage_id;
  return d.dump();
}

std::vector<ClosedWait> resume_heavy_waits(const StagePlan& plan, int64_t stage_id, const std::vector<Event>& events,
                                           int64_t last_ms, std::vector<TaskState>& tasks) {
  std::map<size_t, int64_t> open;
  auto ended = [&](size_t i, int64_t ms) {
    TaskState& st = tasks[i];
    st.waited_ms += ms;
    st.longest_wait_ms = std::max(st.longest_wait_ms, ms);
  };
  for (const Event& e : events) {
    if (e.kind != EventKind::HeavyWait) continue;
    const nlohmann::json d = nlohmann::json::parse(e.detail_json, nullptr, false);
    if (!d.is_object() || d.value("stage_id", int64_t{-1}) != stage_id) continue;
    const std::string task = d.value("task", std::string()), phase = d.value("wait", std::string());
    for (size_t i = 0; i < plan.tasks.size() && i < tasks.size(); ++i) {
      if (to_string(plan.tasks[i].kind) != task) continue;
      if (phase == kWaitBegan) {
        ++tasks[i].waits;
        open[i] = e.wall_ms;
        last_ms = std::max(last_ms, e.wall_ms);
      } else if (phase == kWaitEnded && e.duration_ms) {
        ended(i, *e.duration_ms);
        open.erase(i);
      }
    }
  }
  std::vector<ClosedWait> closed;
  for (const auto& [i, since] : open) {
    closed.push_back(ClosedWait{i, std::max<int64_t>(0, last_ms - since)});
    ended(i, closed.back().length_ms);
  }
  return closed;
}

}  // namespace soak
