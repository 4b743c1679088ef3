// Heavy work that waited for the host (judges/heavy_work.h): a planned heavy
// task that never ran makes the stage inconclusive, by name, with how often
// and how long it waited; one that ran less than planned is shown.
#include "judges/internal.h"

#include "core/duration.h"

namespace soak::judge_detail {

void judge_heavy_work(const Context& c, Judgement& j) {
  for (const HeavyWait& w : c.in.recipe.heavy_waits) {
    const std::string waited =
        format("waited %lld time(s) for the host's heavy work, %s in all (longest %s)", static_cast<long long>(w.waits),
               format_duration(w.waited_ms).c_str(), format_duration(w.longest_ms).c_str());
    const bool never = w.runs == 0;
    auto m = metric("heavy/" + w.task, never ? MetricResult::Insufficient : MetricResult::Pass,
                    format("%s ran %lld of %lld planned run(s); ", w.task.c_str(), static_cast<long long>(w.runs),
                           static_cast<long long>(w.planned)) +
                        waited);
    m.n = w.runs;
    set_numbers(m, static_cast<double>(w.runs), 0, 0, 0, static_cast<double>(w.planned), 1);
    if (never)
      j.find(Severity::Inconclusive, "heavy work did not run: " + m.reason +
                                         ", through the stage and its grace; its rules had nothing to judge");
    j.add(std::move(m));
  }
}

}  // namespace soak::judge_detail
