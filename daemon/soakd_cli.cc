// soakd's command line and composition root: the one place that builds the
// daemon's object graph — config snapshot, logger, lock, store, then (through
// daemon/wiring.h, shared with `soakd probe`) clock, loop, host, HTTP client
// and probe engine, then the runner, the Daemon and its services (managed
// runtimes, campaigns, sampler, notifications).
#include "daemon/soakd_cli.h"

#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "campaigns/service.h"
#include "core/args.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/version.h"
#include "daemon/daemon.h"
#include "daemon/init_cli.h"
#include "daemon/notifier.h"
#include "daemon/probe_cli.h"
#include "daemon/probe_task_runner.h"
#include "daemon/sampler_service.h"
#include "daemon/wiring.h"
#include "managed/launch_check.h"
#include "managed/supervisor.h"
#include "platform/allocator.h"
#include "platform/keep_awake.h"
#include "platform/sample_report.h"
#include "platform/sampler.h"
#include "storage/lock.h"
#include "storage/sqlite_store.h"
#include "storage/write_fault.h"

namespace soak {

namespace {

const char* kUsage = R"(soakd — soak and canary daemon for local LLM runtimes

Usage:
  soakd run --config FILE [--log-stderr] [--log-level LEVEL] [--exit-when-settled]
      Run the daemon: take every candidate in FILE through smoke, canary, gate
      and soak, write every result to the store. SIGTERM/SIGINT stop it
      gracefully (in-flight work is recorded as cancelled by the daemon);
      SIGHUP re-reads FILE (a bad new file is rejected and the old one kept).
      --log-stderr          log to stderr (default: stderr when it is a terminal,
                            else the rotating log file named in the config)
      --log-level LEVEL     trace, debug, info (default), warn, error
      --exit-when-settled   exit once every candidate has a final verdict
  soakd probe --config FILE --candidate NAME [--kind K] [--json]
      Probe one candidate once (health, identity and the functional probes, or
      only kind K: marker, stream, strict_json, tool_call, thinking, repetition,
      identity, health, scrape, long_context, shared_prefix, agent, burst,
      cancel, embeddings, rerank, or all), print a table (or JSON) and store
      the rows; it may run beside the daemon. Exit 0 when every row is clean.
  soakd sample --once [--config FILE] [--json]
      Print this host's memory figures (pressure, swap, compressor) and each
      candidate's runtime process (how it was found, footprint, resident,
      swap), plus every inference engine running: a check of the setup.
  soakd init [FILE] [--print] [--ports LIST]
      Write a starter config from what this host runs: asks the loopback
      ports of every running inference engine soakd recognises and every
      runtime's default port (llama-server 8080, Ollama 11434, LM Studio 1234,
      vLLM, oMLX and Rapid-MLX 8000, MLX-LM 8080) what they serve, and writes
      one candidate per runtime found (its model id, build, slots, launch) with
      what it could not learn as comments; nothing found: one disabled example
      per runtime. Loopback only, each request bounded, at
      most 16 ports. FILE defaults to ~/Library/Application Support/soakd/
      soakd.json (Linux: ~/.config/soakd/soakd.json); an existing file is
      never overwritten (exit 1).
      --print               write to stdout instead of FILE
      --ports LIST          ask only these ports (comma-separated, at most 16)
  soakd check-config FILE
      Validate FILE without starting anything. Prints every problem with its
      JSON path and an example of a valid value; exit 0 when valid. For a
      managed candidate (a "launch" block) also: its program must be found
      (PATH or a path), and warnings for flags a runtime needs (MLX-LM
      --max-tokens, llama-server -n and -c), which do not fail the check.
  soakd --version
  soakd --help

Files: the config is JSON with comments; see examples/soakd.example.json.
Exit codes: 0 ok, 1 failure (bad config, store, or another soakd running), 2 usage.
)";

int cmd_check_config(const Args& a) {
  if (a.positionals().size() != 2) {
    std::fprintf(stderr, "soakd check-config: give exactly one FILE (see soakd --help)\n");
    return kExitUsage;
  }
  const std::string& path = a.positionals()[1];
  auto cfg = load_config(path);
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.message().c_str());
    return kExitFailure;
  }
  if (auto st = SqliteStore::check_location(cfg->store_path); !st) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), st.message().c_str());
    return kExitFailure;
  }
  // Managed candidates, on this machine: the program, the environment, the flags.
  const LaunchFindings found = check_launches(*cfg, probes::process_env());
  for (const auto& e : found.errors) std::fprintf(stderr, "%s\n", e.c_str());
  for (const auto& w : found.warnings) std::fprintf(stderr, "%s\n", w.c_str());
  if (!found.errors.empty()) return kExitFailure;
  std::printf("%s: ok — %zu candidate(s); store %s; log %s\n", path.c_str(), cfg->candidates.size(),
              cfg->store_path.c_str(), cfg->log_path.c_str());
  for (const auto& c : cfg->candidates) {
    std::printf("  %-24s %-10s %-28s %s%s\n", c.name.c_str(), std::string(to_string(c.runtime)).c_str(),
                c.model.c_str(), c.base_url.c_str(), c.baseline ? (" (baseline " + *c.baseline + ")").c_str() : "");
    if (c.launch) {
      std::string argv;
      for (const auto& a : display_argv(*c.launch)) argv += (argv.empty() ? "" : " ") + a;
      std::printf("  %-24s managed: %s\n", "", argv.c_str());
    }
  }
  if (!cfg->notify.command.empty()) {
    std::string argv;
    for (const auto& a : cfg->notify.command) argv += (argv.empty() ? "" : " ") + a;
    std::printf("  notify on every verdict: %s (killed after %s)\n", argv.c_str(),
                format_duration(cfg->notify.timeout_ms).c_str());
  }
  return kExitOk;
}

int cmd_sample(const Args& a) {
  if (!a.flag("once")) {
    std::fprintf(stderr, "soakd sample: only --once is supported (the daemon samples on its own timer)\n");
    return kExitUsage;
  }
  Config cfg;
  if (auto path = a.get("config")) {
    auto loaded = load_config(*path);
    if (!loaded) {
      std::fprintf(stderr, "%s\n", loaded.message().c_str());
      return kExitFailure;
    }
    cfg = std::move(*loaded);
  }
  SystemClock clock;
  auto sampler = make_system_sampler(runtime_signatures());
  SampleReport report = collect_sample_report(*sampler, cfg, clock.wall_ms());
  std::fputs((a.flag("json") ? render_sample_json(report) : render_sample_text(report)).c_str(), stdout);
  return report.host_error.empty() ? kExitOk : kExitFailure;
}

int cmd_run(const Args& a) {
  return_large_blocks_to_the_system();  // before the first allocation worth returning
  // A notify command that exits before reading its stdin must not end soakd
  // (probes/command.h); children get the default disposition back from libuv.
  ::signal(SIGPIPE, SIG_IGN);
  auto path = a.get("config");
  if (!path) {
    std::fprintf(stderr, "soakd run: --config FILE is required (see soakd --help)\n");
    return kExitUsage;
  }
  auto cfg = load_config(*path);
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.message().c_str());
    return kExitFailure;
  }
  auto log = make_logger(a.flag("log-stderr") ? LogTarget::Console : LogTarget::Auto, cfg->log_path,
                         a.get("log-level").value_or("info"));
  if (!log) {
    std::fprintf(stderr, "soakd: %s\n", log.message().c_str());
    return kExitFailure;
  }
  if (auto st = SqliteStore::check_location(cfg->store_path); !st) {  // before the lock file is made beside it
    (*log)->error("{}", st.message());
    if (!a.flag("log-stderr") && !isatty(STDERR_FILENO)) std::fprintf(stderr, "soakd: %s\n", st.message().c_str());
    return kExitFailure;
  }
  {
    const LaunchFindings found = check_launches(*cfg, probes::process_env());
    for (const auto& e : found.errors) (*log)->warn("{} (its candidate will be blocked)", e);
    for (const auto& w : found.warnings) (*log)->warn("{}", w);
  }
  auto lock = DaemonLock::acquire(cfg->store_path);
  if (!lock) {
    (*log)->error("{}", lock.message());
    if (!a.flag("log-stderr") && !isatty(STDERR_FILENO)) std::fprintf(stderr, "soakd: %s\n", lock.message().c_str());
    return kExitFailure;
  }
  auto store = SqliteStore::open(cfg->store_path, OpenMode::ReadWrite);
  if (!store) {
    (*log)->error("{}", store.message());
    return kExitFailure;
  }
  // The one sampler of the running daemon: this host's row, the engine's
  // process discovery, the supervisor's and the sampler service's readings.
  auto sampler = make_system_sampler(runtime_signatures());
  auto wiring = Wiring::build(**store, *log, *sampler);
  // A store that cannot write at start (full disk, a lock held): wait for it
  // here, up to store_outage.stop_after, rather than exit and be restarted at
  // once by launchd, again and again.
  for (int64_t waited_ms = 0, delay_ms = kOutboxRetryFirstMs;
       !wiring && classify_write_failure(wiring.error()) == WriteFault::Passing &&
       waited_ms < cfg->store_outage.stop_after_ms;
       waited_ms += delay_ms, delay_ms = std::min(delay_ms * 2, kOutboxRetryMaxMs)) {
    (*log)->error("store not writable: {}; trying again in {} s", wiring.message(), delay_ms / 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    wiring = Wiring::build(**store, *log, *sampler);
  }
  if (!wiring) {
    (*log)->error("{}", wiring.message());
    return classify_write_failure(wiring.error()) == WriteFault::Passing ? kStoreUnwritableExit : kExitFailure;
  }
  (*wiring)->deps().outbox.set_on_state([l = lock->get()](const std::string& note) { l->set_note(note); });
  const Deps& deps = (*wiring)->deps();
  const ConfigSnapshot snapshot = std::make_shared<const Config>(std::move(*cfg));

  DaemonOptions opts;
  opts.config_path = *path;
  opts.exit_policy = a.flag("exit-when-settled") ? ExitPolicy::ExitWhenSettled : ExitPolicy::RunForever;
  opts.version = kSoakdVersion;
  int code;
  {
    DeferredTrim trim(deps.loop, kTrimAfterWorkMs, trim_free_memory);
    ProbeTaskRunner runner((*wiring)->engine(), deps.outbox, &trim);
    Daemon d(snapshot, opts, deps);
    // Notifications first, so the others can tell it their verdicts. At a stop
    // every service is asked at once: a command already running is waited for
    // (its outcome stored), and a verdict written while the others stop is in
    // the store and the log, not told.
    auto notifier = std::make_unique<NotifyService>(snapshot, deps, [&d] { d.check_settled(); });
    NotifyService& notify = *notifier;
    d.add_service(std::move(notifier));
    // Managed runtimes next: stopped after the probes against them were cancelled.
    auto runtimes =
        std::make_unique<RuntimeSupervisor>(snapshot, deps, *sampler, engine_ready_check((*wiring)->engine()));
    RuntimeSupervisor& control = *runtimes;
    d.add_service(std::move(runtimes));
    auto campaigns = std::make_unique<CampaignService>(
        snapshot, deps, runner, [&d] { d.check_settled(); }, &control);
    campaigns->set_on_verdict([&notify](const VerdictNotice& n) { notify.notify(n); });
    const Campaigns& view = campaigns->campaigns();
    d.add_service(std::move(campaigns));
    d.add_service(std::make_unique<SamplerService>(
        snapshot, deps, *sampler, [&view] { return view.active(); }, make_system_power_assertion(deps.log)));
    if (auto st = d.start(); !st) {
      (*log)->error("{}", st.message());
      return kExitFailure;
    }
    code = d.run();
    (*wiring)->end_transfers();
  }                    // the daemon and the runner go here
  (*wiring)->close();  // then the engine and the client, and the loop
  return code;
}

}  // namespace

int soakd_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ArgSpec spec{{"help", "version", "log-stderr", "exit-when-settled", "json", "once", "print"},
               {"config", "log-level", "candidate", "kind", "ports"}};
  auto a = Args::parse(args, spec);
  if (!a) {
    std::fprintf(stderr, "soakd: %s (see soakd --help)\n", a.message().c_str());
    return kExitUsage;
  }
  if (a->flag("help") || (a->positionals().empty() && !a->flag("version"))) {
    std::fputs(kUsage, a->flag("help") ? stdout : stderr);
    return a->flag("help") ? kExitOk : kExitUsage;
  }
  if (a->flag("version")) {
    std::printf("soakd %s\n", kSoakdVersion);
    return kExitOk;
  }
  const std::string& cmd = a->positionals()[0];
  if (cmd == "check-config") return cmd_check_config(*a);
  if (cmd == "run") return cmd_run(*a);
  if (cmd == "sample") return cmd_sample(*a);
  if (cmd == "probe") return cmd_probe(*a);
  if (cmd == "init") return cmd_init(*a);
  std::fprintf(stderr, "soakd: unknown command \"%s\" (see soakd --help)\n", cmd.c_str());
  return kExitUsage;
}

}  // namespace soak
