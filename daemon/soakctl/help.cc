// `soakctl --help`: every command, option and exit code.
#include "daemon/soakctl/common.h"

#include <string>

#include "core/config.h"

namespace soak::soakctl {

namespace {

const char* kUsage = R"(soakctl — query soakd's promotion verdicts

Usage:
  soakctl [STORE] status [--json]
      One row per candidate: model, runtime, build, current stage with a
      progress bar, latest verdict.
  soakctl [STORE] verdict --model M --runtime R [--build B] [--json]
      The latest verdict of model M on runtime R (at build B, else the newest
      build seen). Exit code: 0 promoted, 1 rejected, 3 anything else
      (running, hold, inconclusive, blocked, or no verdict yet).
  soakctl [STORE] explain CANDIDATE [--build B] [--json]
      Why: recomputes the latest judged verdict of CANDIDATE (a config name)
      from the stored rows and shows every metric with its n, estimate,
      baseline, interval, threshold and reason. Exit 5 if the recomputed
      verdict differs from the stored one.
  soakctl [STORE] history CANDIDATE [--json]
      Every build of CANDIDATE with its stages and verdicts.
  soakctl [STORE] events [--candidate CANDIDATE] [--kind K] [--limit N] [--json]
      The latest events (daemon start/stop, reloads, build changes, gaps,
      guard trips, restarts, controls), newest last. Default limit 50.
  soakctl [STORE] start CANDIDATE [--who W] [--why TEXT]
      Ask soakd to (re)start CANDIDATE's campaign from smoke now, ignoring the
      nightly window.
  soakctl [STORE] abort CANDIDATE [--who W] [--why TEXT]
      Ask soakd to stop CANDIDATE's running stage; the verdict becomes
      inconclusive, recording who and why.
  soakctl [STORE] promote CANDIDATE --override [--who W] --why TEXT
      Promote by hand. Recorded as an override with who and why.
      start/abort/promote are requests through the store: soakd picks them up
      within a second (see `soakctl events --kind control`).

STORE (first match wins):
  --db PATH        the store file
  --config FILE    the store named in soakd's config FILE
  (default)        )" "%DEFAULT%" R"(

Every command takes --json for machine-readable output.
Exit codes: 0 ok / promoted, 1 rejected, 2 usage error, 3 not decided,
            4 store or candidate not found / unreadable, 5 explain: the
            recomputed verdict differs from the stored one.
)";

}  // namespace

std::string usage_text() {
  std::string u = kUsage;
  auto pos = u.find("%DEFAULT%");
  u.replace(pos, 9, default_store_path());
  return u;
}

}  // namespace soak::soakctl
