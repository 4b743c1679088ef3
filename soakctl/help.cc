// `soakctl --help`: every command, option and exit code. Each command's usage
// line lists exactly the options its Command takes (tests/unit/soakctl_test.cc
// checks that); the lists of runtimes and event kinds come from their tables.
#include "soakctl/common.h"

#include <string>

#include "core/config.h"

namespace soak::soakctl {

namespace {

const char* kUsage = R"(soakctl — query soakd's promotion verdicts and send it requests

Usage:
  soakctl [STORE] status [--json]
      One row per candidate, its newest build: model, runtime, build,
      current stage with a progress bar, latest verdict; earlier builds are
      counted, with the last promoted one (history lists them).
  soakctl [STORE] verdict --model M --runtime R [--build B] [--json]
      The latest verdict of model M on runtime R (at build B, else the newest
      build seen). Exit code: 0 promoted, 1 rejected, 3 anything else
      (running, hold, inconclusive, blocked, or no verdict yet).
      R is one of: %RUNTIMES%.
  soakctl [STORE] equivalence CANDIDATE_A CANDIDATE_B [--build-a B1] [--build-b B2] [--json]
      Compare the latest stored golden-set runs of the two candidates (their
      newest builds, or the builds given): per prompt equal or not, the first
      fork with both tokens and margins, the mean top-k KL against the noise
      floor (CANDIDATE_B's own last two runs, else CANDIDATE_A's). The rules
      (max_fork_margin, kl_factor, min_kl) are CANDIDATE_B's: those its
      latest judged canary or soak stored, else its entry in --config FILE,
      else the defaults. Exit code: 0 equivalent, 1 not, 3 nothing to
      compare yet.
  soakctl [STORE] explain CANDIDATE [--build B] [--recompute | --stored] [--json]
      Why: recomputes the latest judged verdict of CANDIDATE (a config name;
      its newest build, or build B) from the stored rows and shows every
      metric with its n, estimate, baseline, interval, threshold and reason.
      Exit 5 if the recomputed verdict differs from the stored one. A
      judgment of more than 8000 probe rows (the stage's and its
      baseline's: a gate's day, a soak's week) is shown as the daemon
      judged it, from the same rows; --recompute judges them again (half a
      second and more for a week), --stored never does.
  soakctl [STORE] history CANDIDATE [--json]
      Every build or launch of CANDIDATE with its launch, stages and
      verdicts.
  soakctl [STORE] events [--candidate CANDIDATE] [--kind K] [--limit N] [--json]
      The latest N events (default %LIMIT%), newest last: daemon start/stop,
      reloads, build changes, gaps, guard trips, restarts, controls. With
      --candidate: the events of its newest build and the host-wide ones.
      K is one of: %KINDS%.
  soakctl [STORE] report [CANDIDATE] [--build B] --html FILE [--json]
      Write one static HTML page (no script, nothing fetched) to FILE:
      CANDIDATE's verdict with its full argument, stage timeline, memory with
      the soak's trend line, host pressure, candidate beside baseline, long
      context, bursts, and the rows the verdict cites. Without CANDIDATE:
      every candidate with its verdict and a small timeline.
  soakctl [STORE] metrics [--json]
      The Prometheus text soakd writes to its metrics.textfile for
      node_exporter's textfile collector: stages, verdicts, probe outcomes,
      TTFT and decode summaries, memory, host pressure, the memory guard.
  soakctl [STORE] start CANDIDATE [--who W] [--why TEXT] [--json]
      Ask soakd to start CANDIDATE's campaign from smoke now, ignoring the
      nightly window; refused while a stage runs (abort it first).
  soakctl [STORE] abort CANDIDATE [--who W] [--why TEXT] [--json]
      Ask soakd to stop CANDIDATE's running stage; the verdict becomes
      inconclusive, recording who and why.
  soakctl [STORE] promote CANDIDATE --override --why TEXT [--who W] [--json]
      Promote by hand. Recorded as an override with who and why.
      start/abort/promote are requests through the store: soakctl then tells
      the running soakd (SIGUSR1), which picks them up at once (else within
      5s) and records what it did as a control event (see `soakctl events
      --kind control`). W defaults to $USER.

STORE (first match wins):
  --db PATH        the store file
  --config FILE    the store named in soakd's config FILE
  (default)        %DEFAULT%

  --help, -h       this text
  --version        soakctl's version

Every command takes --json for machine-readable output, and refuses an option
it does not list above.
Exit codes: 0 ok / promoted, 1 rejected, 2 usage error, 3 not decided,
            4 store, config or candidate not found / unreadable, 5 explain:
            the recomputed verdict differs from the stored one (shown as
            judged, explain exits 0).
)";

// "a, b, c" broken into lines that fit the help's width, each continuation
// indented like a command's description; first_column is where it starts.
std::string wrapped(const std::string& list, size_t first_column) {
  constexpr size_t kWidth = 78;
  const std::string indent(6, ' ');
  std::string out, word;
  size_t column = first_column;
  auto flush = [&] {
    if (word.empty()) return;
    if (column + 1 + word.size() > kWidth && column > indent.size()) {
      out += "\n" + indent;
      column = indent.size();
    } else if (!out.empty()) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
    word.clear();
  };
  for (char ch : list) {
    if (ch == ' ')
      flush();
    else
      word += ch;
  }
  flush();
  return out;
}

void fill(std::string& text, const std::string& key, const std::string& list) {
  auto pos = text.find(key);
  const size_t line_start = text.rfind('\n', pos) + 1;
  text.replace(pos, key.size(), wrapped(list, pos - line_start));
}

}  // namespace

std::string usage_text() {
  std::string u = kUsage;
  fill(u, "%RUNTIMES%", runtime_kind_names());
  fill(u, "%KINDS%", event_kind_names());
  u.replace(u.find("%LIMIT%"), 7, std::to_string(kDefaultEventLimit));
  u.replace(u.find("%DEFAULT%"), 9, default_store_path());
  return u;
}

}  // namespace soak::soakctl
