#include "daemon/notifier.h"

#include <filesystem>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/service.h"
#include "storage/outbox.h"

extern char** environ;

namespace soak {

namespace {

// A graceful stop waits for a running command (core/config.h kMaxNotifyTimeoutMs).
static_assert(kStopGraceMs + kMaxNotifyTimeoutMs < kLaunchdExitTimeOutMs,
              "a stop that waits for the notify command must fit launchd's ExitTimeOut");

// The verdict file is the operator's, like the log beside it.
constexpr unsigned kReportMode = 0600;
// The longest line of the command's output the log takes (a runaway command
// is cut; the whole output is at most kMaxCommandOutput).
constexpr size_t kMaxLoggedLine = 500;

std::string_view outcome_name(const probes::CommandEnd& e) {
  switch (e.kind) {
    case probes::CommandEndKind::NotStarted: return "not_started";
    case probes::CommandEndKind::TimedOut: return "timed_out";
    case probes::CommandEndKind::Cancelled: return "cancelled";
    case probes::CommandEndKind::Exited: return e.ok() ? "ok" : "failed";
  }
  return "failed";
}

std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace

std::string notice_json(const VerdictNotice& n, const std::string& report_path) {
  const VerdictRow& v = n.verdict;
  nlohmann::ordered_json j;
  j["candidate"] = n.candidate.name;
  j["model"] = n.candidate.model;
  j["runtime"] = to_string(n.candidate.runtime);
  j["build"] = n.candidate.build;
  j["base_url"] = n.candidate.base_url;
  j["verdict"] = to_string(v.state);
  j["stage"] = v.stage;
  j["reason"] = v.reason;
  j["wall_ms"] = v.wall_ms;
  j["judge_version"] = v.judge_version;
  j["baseline_mode"] = v.baseline_mode;
  if (v.is_override) j["override"] = {{"who", v.who}, {"why", v.why}};
  nlohmann::ordered_json failing = nlohmann::ordered_json::array();
  for (const auto& m : v.metrics)
    if (m.result == MetricResult::Fail) failing.push_back({{"metric", m.metric}, {"reason", m.reason}});
  j["failing_metrics"] = std::move(failing);
  j["report"] = report_path;
  return j.dump();
}

std::vector<std::string> notice_env(const std::vector<std::string>& base, const VerdictNotice& n,
                                    const std::string& report_path) {
  const std::vector<std::pair<std::string, std::string>> vars{
      {"SOAKD_CANDIDATE", n.candidate.name}, {"SOAKD_VERDICT", std::string(to_string(n.verdict.state))},
      {"SOAKD_STAGE", n.verdict.stage},      {"SOAKD_REASON", n.verdict.reason},
      {"SOAKD_REPORT", report_path},
  };
  std::vector<std::string> env;
  for (const auto& e : base) {
    bool replaced = false;
    for (const auto& [name, value] : vars) replaced = replaced || e.rfind(name + "=", 0) == 0;
    if (!replaced) env.push_back(e);
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::string notice_report_path(const std::string& log_path, const std::string& candidate) {
  const auto dir = std::filesystem::path(log_path).parent_path() / "verdicts";
  return (dir / (candidate + ".json")).string();
}

std::string notify_outcome_json(const VerdictNotice& n, const probes::CommandEnd& end, const std::string& detail) {
  nlohmann::ordered_json j;
  j["verdict"] = to_string(n.verdict.state);
  j["stage"] = n.verdict.stage;
  j["outcome"] = outcome_name(end);
  j["detail"] = detail;
  return j.dump();
}

// ---------------------------------------------------------------- NotifyService

NotifyService::NotifyService(ConfigSnapshot cfg, const Deps& deps, std::function<void()> maybe_settled)
    : cfg_(std::move(cfg)), d_(deps), maybe_settled_(std::move(maybe_settled)), defer_(deps.loop) {}

NotifyService::~NotifyService() = default;  // a command still running is killed (CommandRun)

void NotifyService::notify(const VerdictNotice& n) {
  const NotifySettings& s = cfg_->notify;
  if (s.command.empty()) return;
  const std::string verdict(to_string(n.verdict.state));
  if (stopping_) {
    d_.log->warn("notify: {} {} not notified: soakd is stopping (the verdict is in the store)", n.candidate.name,
                 verdict);
    return;
  }
  const std::string report = notice_report_path(cfg_->log_path, n.candidate.name);
  const std::string body = notice_json(n, report);
  if (auto made = make_parent_dirs_private(report); !made)
    d_.log->warn("notify: {}: {}", report, made.message());
  else if (auto w = write_file_atomic(report, body + "\n", kReportMode); !w)
    d_.log->warn("notify: {}", w.message());
  const int64_t id = next_id_++;
  auto run = std::make_unique<Run>();
  run->notice = n;
  run->started_mono_ns = d_.clock.mono_ns();
  run->program = s.command[0];
  run->timeout_ms = s.timeout_ms;
  probes::CommandSpec spec{s.command, s.timeout_ms, body + "\n", notice_env(process_environment(), n, report)};
  run->command = std::make_unique<probes::CommandRun>(d_.loop, defer_, std::move(spec),
                                                      [this, id](probes::CommandEnd e) { ended(id, std::move(e)); });
  Run& r = *run;
  runs_.emplace(id, std::move(run));
  d_.log->info("notify: {} {}: running {}", n.candidate.name, verdict, s.command[0]);
  r.command->start();
}

void NotifyService::ended(int64_t id, probes::CommandEnd end) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  const Run& r = *it->second;
  const VerdictNotice& n = r.notice;
  const int64_t took_ms = (d_.clock.mono_ns() - r.started_mono_ns) / 1'000'000;
  const std::string detail = probes::describe_end(r.program, end, r.timeout_ms);
  std::istringstream lines(end.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) d_.log->info("notify: {} output: {}", n.candidate.name, line.substr(0, kMaxLoggedLine));
  if (end.ok())
    d_.log->info("notify: {} {}: {} in {} ms", n.candidate.name, to_string(n.verdict.state), detail, took_ms);
  else
    d_.log->warn("notify: {} {}: {} (the verdict is in the store)", n.candidate.name, to_string(n.verdict.state),
                 detail);
  Event e;
  e.wall_ms = d_.clock.wall_ms();
  e.host_id = d_.host_id;
  e.candidate_id = n.candidate.id;
  e.kind = EventKind::Notify;
  e.detail_json = notify_outcome_json(n, end, detail);
  e.duration_ms = took_ms;
  d_.outbox.put(e);
  // The CommandRun is inside its own callback: it goes on the next loop pass.
  defer_.post([this, id] {
    runs_.erase(id);
    if (runs_.empty() && stop_done_) std::exchange(stop_done_, nullptr)();
    if (maybe_settled_) maybe_settled_();
  });
}

void NotifyService::stop(std::function<void()> done) {
  stopping_ = true;
  if (runs_.empty()) return done();
  d_.log->info("notify: waiting for {} command(s) to end (each within notify.timeout)", runs_.size());
  stop_done_ = std::move(done);
}

}  // namespace soak
