// Campaigns: soakctl's start / abort / promote requests, read from the store
// at most every kControlPollEveryMs and answered there.
#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"

namespace soak {

using json = nlohmann::ordered_json;

void Campaigns::handle_controls(int64_t now) {
  if (now < next_control_poll_ms_) return;
  next_control_poll_ms_ = now + kControlPollEveryMs;
  auto pending = d_.store.pending_controls();
  if (!pending) {
    d_.log->error("cannot read control requests: {}", pending.message());
    return;
  }
  for (const auto& c : *pending) {
    std::string result;
    Track* t = track(c.candidate);
    if (!t) {
      result = "no candidate named \"" + c.candidate + "\" in the running config";
    } else if (c.action == ControlAction::Start) {
      if (!t->row) {
        result = "the build of " + c.candidate + " is not known yet; it starts on its own once read";
      } else if (t->phase == Phase::Staged) {
        result = "already running (" + std::string(to_string(t->stage->kind)) + ")";
      } else if (managed(*t) && t->managed.runtime != RuntimePhase::Up) {
        // The runtime is started first; its build is read, then smoke starts.
        t->managed.hold = false;
        t->managed.smoke_when_up = true;
        result = "started: the runtime starts, then smoke";
      } else {
        t->stage.reset();
        t->from_build_change = false;
        start_stage(*t, StageKind::Smoke, now);
        result = "started: smoke";
      }
    } else if (c.action == ControlAction::Abort) {
      if (t->phase == Phase::Done || !t->row) {
        result = "nothing to abort";
      } else {
        end_with(*t, VerdictState::Inconclusive,
                 "aborted by " + (c.who.empty() ? "an operator" : c.who) + (c.why.empty() ? "" : ": " + c.why), now,
                 c.who, c.why);
        result = "aborted";
      }
    } else {  // Promote
      if (!c.is_override) {
        result = "refused: promoting by hand needs --override";
      } else if (!t->row) {
        result = "the build of " + c.candidate + " is not known yet";
      } else {
        end_with(*t, VerdictState::Promoted, "promoted by override", now, c.who.empty() ? "an operator" : c.who, c.why);
        result = "promoted (override)";
      }
    }
    if (auto st = d_.store.mark_control_handled(c.id, now, result); !st) {
      d_.log->error("cannot mark control request {} handled: {}", c.id, st.message());
      d_.outbox.note_failure(st.error());
    }
    d_.log->info("control {} {}: {}", to_string(c.action), c.candidate, result);
    json d;
    d["action"] = to_string(c.action);
    d["who"] = c.who;
    d["why"] = c.why;
    d["override"] = c.is_override;
    d["result"] = result;
    write_event(EventKind::Control, t && t->row ? std::optional<int64_t>(t->row->id) : std::nullopt, d.dump(), now);
  }
}

}  // namespace soak
