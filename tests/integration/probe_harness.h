// The probe engine on a libuv loop in the test's own thread, for the probe
// integration tests: run kinds against a candidate and collect the rows, with
// a guard timer that cancels everything (and fails the test) if a run does not
// end in time. Every wait is the loop's; nothing sleeps.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config.h"
#include "core/uv_util.h"
#include "probes/engine.h"
#include "probes/transport/http_client.h"
#include "tests/catch.h"
#include "tests/fake_runtime/scenario.h"

namespace soak::probe_test {

inline constexpr int64_t kGuardMs = 30'000;  // no run in these tests may take longer
inline constexpr int kDrainRounds = 100;     // loop passes for cancelled work to report after the guard

// A candidate pointing at `base_url`, with limits and sizes small enough for loopback.
inline CandidateConfig candidate(const std::string& base_url, RuntimeKind kind = RuntimeKind::LlamaCpp) {
  CandidateConfig c;
  c.name = "fake";
  c.model = fake::kDefaultModel;
  c.runtime = kind;
  c.base_url = base_url;
  c.settings.limits.connect_timeout_ms = 2'000;
  c.settings.limits.wall_timeout_ms = 10'000;
  c.settings.limits.stall_timeout_ms = 2'000;
  c.settings.long_context_sizes = {1024};
  c.settings.burst_sizes = {1, 4};
  return c;
}

class Harness {
 public:
  // `guard_ms`: how long one run may take (a real runtime on a busy host needs more than the fakes).
  explicit Harness(probes::EngineOptions opts = {}, int64_t guard_ms = kGuardMs) : guard_ms_(guard_ms) {
    uv_loop_init(&loop_);
    http_ = std::make_unique<HttpClient>(&loop_, clock_);
    engine_ = std::make_unique<probes::ProbeEngine>(&loop_, *http_, clock_, std::move(opts));
  }
  ~Harness() {
    http_->shutdown();
    engine_.reset();
    http_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

  uv_loop_t* loop() { return &loop_; }
  probes::ProbeEngine& engine() { return *engine_; }
  const Clock& clock() const { return clock_; }

  std::vector<ProbeResult> run(const CandidateConfig& c, std::vector<ProbeKind> kinds) {
    return run(c, probes::RunSpec{std::move(kinds), std::nullopt, {}});
  }
  std::vector<ProbeResult> run(const CandidateConfig& c, probes::RunSpec spec) {
    std::vector<ProbeResult> rows;
    bool done = false;
    engine_->run(
        c, std::move(spec), [&](ProbeResult r) { rows.push_back(std::move(r)); }, [&] { done = true; });
    spin_until(done);
    return rows;
  }

  Result<probes::BuildIdentity> read_build(const CandidateConfig& c) {
    std::optional<Result<probes::BuildIdentity>> out;
    bool done = false;
    engine_->read_build(c, [&](Result<probes::BuildIdentity> r) {
      out.emplace(std::move(r));
      done = true;
    });
    spin_until(done);
    return *out;
  }

  // Runs the loop until `flag` is set; past the guard everything is cancelled and the test fails.
  // A prepare handle looks at the flag before the loop would block in poll, so
  // a flag set by a timer callback ends the wait at once. Past the guard the
  // wait ends even if the cancelled work never reports back.
  void spin_until(const bool& flag) {
    bool guard_fired = false;
    Timer guard(&loop_);
    guard.start(static_cast<uint64_t>(guard_ms_), 0, [&] {
      guard_fired = true;
      engine_->cancel_all();
      uv_stop(&loop_);
    });
    struct Watch {
      const bool* flag;
      uv_loop_t* loop;
    } watch{&flag, &loop_};
    UvHandle<uv_prepare_t> prepare;
    uv_prepare_init(&loop_, prepare.get());
    prepare.mark_initialized();
    prepare.get()->data = &watch;
    uv_prepare_start(prepare.get(), [](uv_prepare_t* p) {
      auto* w = static_cast<Watch*>(p->data);
      if (*w->flag) uv_stop(w->loop);
    });
    while (!flag && !guard_fired) uv_run(&loop_, UV_RUN_DEFAULT);
    for (int i = 0; i < kDrainRounds && !flag; ++i) uv_run(&loop_, UV_RUN_NOWAIT);  // what the cancel delivers
    uv_prepare_stop(prepare.get());
    guard.stop();
    CHECK_FALSE(guard_fired);
    REQUIRE(flag);
  }

 private:
  uv_loop_t loop_;
  int64_t guard_ms_;
  SystemClock clock_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<probes::ProbeEngine> engine_;
};

inline const ProbeResult* find_row(const std::vector<ProbeResult>& rows, ProbeKind kind,
                                   const std::string& workload = "") {
  for (const auto& r : rows)
    if (r.kind == kind && (workload.empty() || r.workload_id == workload)) return &r;
  return nullptr;
}

inline std::string describe(const std::vector<ProbeResult>& rows) {
  std::string s;
  for (const auto& r : rows)
    s += std::string(to_string(r.kind)) + " " + r.workload_id + " " + std::string(to_string(r.outcome)) + " " +
         r.detail + "\n";
  return s;
}

}  // namespace soak::probe_test
