// Campaigns: reading each candidate's build, registering a candidate row per
// build, and choosing the baseline it is judged against.
#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "campaigns/campaigns.h"
#include "probes/runtimes/catalog.h"
#include "probes/served_state.h"
#include "probes/server_cap.h"

namespace soak {

using json = nlohmann::ordered_json;

void Campaigns::check_build(Track& t, int64_t now) {
  // A managed runtime's build is read once each time it comes up: it cannot
  // change without soakd starting it again.
  if (managed(t) && (t.managed.runtime != RuntimePhase::Up || !t.managed.build_unread)) return;
  if (t.cfg->build.source == BuildSource::Fixed && (!t.row || t.row->build != t.cfg->build.fixed)) {
    on_build(t.name, probes::BuildIdentity{t.cfg->build.fixed, {}, {}}, now);
    t.next_build_check_ms = now;  // its fingerprint is read at once, below on the next pass
    return;
  }
  // A fixed build is still read: the build is fixed, what the runtime serves
  // with is not (probes/probe_build.cc reads the fingerprint for it too).
  if (t.build_read_in_flight || now < t.next_build_check_ms || frozen_) return;
  t.build_read_in_flight = true;
  if (!t.first_build_attempt_ms) t.first_build_attempt_ms = now;
  std::string name = t.name;
  runner_.read_build(*t.cfg, [this, name](Result<probes::BuildIdentity> b) {
    on_build(name, std::move(b), current_time());
    changed();
  });
}

std::optional<int64_t> Campaigns::find_baseline(const Track& t, int64_t exclude_id) {
  // The previous promoted build of this candidate, else the configured
  // baseline's current row (its newest stored row when it is not running).
  auto rows = d_.store.candidates();
  if (rows) {
    std::optional<int64_t> best;
    for (const auto& r : *rows) {
      if (r.host_id != d_.host_id || r.name != t.name || r.id == exclude_id) continue;
      auto v = d_.store.latest_verdict(r.id);
      if (v && *v && (*v)->state == VerdictState::Promoted && (!best || r.id > *best)) best = r.id;
    }
    if (best) return best;
  }
  if (t.cfg->baseline) {
    auto it = tracks_.find(*t.cfg->baseline);
    if (it != tracks_.end()) return it->second.row ? std::optional<int64_t>(it->second.row->id) : std::nullopt;
    std::optional<int64_t> newest;
    if (rows)
      for (const auto& r : *rows)
        if (r.host_id == d_.host_id && r.name == *t.cfg->baseline && (!newest || r.id > *newest)) newest = r.id;
    return newest;
  }
  return std::nullopt;
}

std::optional<LaunchCap> Campaigns::launch_cap_of(const Track& t) const {
  if (!t.row || t.cfg->kind != WorkloadKind::Chat) return std::nullopt;
  auto f = probes::parse_fingerprint_json(t.row->fingerprint);
  if (!f || !f->max_tokens_default) return std::nullopt;
  LaunchCap cap;
  cap.tokens = *f->max_tokens_default;
  cap.min_tokens = t.cfg->settings.limits.min_server_cap;
  cap.accepted = t.cfg->accept_server_cap;
  if (cap.tokens >= 0 && cap.tokens < cap.min_tokens)
    cap.lift = probes::lift_server_cap(probes::builtin_runtime(t.cfg->runtime).lift_cap, cap.tokens, std::nullopt,
                                       std::nullopt);
  return cap;
}

void Campaigns::settle_baseline(Track& t) {
  // The baseline is settled when the canary starts: the previous promoted
  // build, else the configured baseline's current build.
  t.baseline_id = find_baseline(t, t.row->id);
  if (t.baseline_id != t.row->baseline_id && d_.store.set_baseline(t.row->id, t.baseline_id))
    t.row->baseline_id = t.baseline_id;
}

void Campaigns::register_candidate(Track& t, const std::string& build, int64_t now, const std::string& fingerprint) {
  CandidateRow c;
  c.host_id = d_.host_id;
  c.name = t.name;
  c.model = t.cfg->model;
  c.runtime = t.cfg->runtime;
  c.build = build;
  c.base_url = t.cfg->base_url;
  c.fingerprint = fingerprint;
  auto id = d_.store.upsert_candidate(c, now);
  if (!id) {
    d_.log->error("{}: cannot register build {}: {}", t.name, build, id.message());
    d_.outbox.note_failure(id.error());
    return;
  }
  auto row = d_.store.candidate(*id);
  if (!row || !*row) return;
  t.row = **row;
  if (managed(t)) control_->link(t.name, t.row->id);  // the launch serves this build
  t.baseline_id = find_baseline(t, *id);
  if (t.baseline_id && t.row->baseline_id != t.baseline_id) {
    if (auto st = d_.store.set_baseline(*id, t.baseline_id); st) t.row->baseline_id = t.baseline_id;
  }
}

namespace {
std::string summary_of(const std::string& fingerprint_json) {
  auto f = probes::parse_fingerprint_json(fingerprint_json);
  return f ? f->summary() : "unreadable fingerprint";
}
}  // namespace

bool Campaigns::fingerprint_changed(Track& t, const probes::BuildIdentity& b) {
  if (b.fingerprint.empty() || b.fingerprint == t.row->fingerprint) return false;  // unknown now, or the same
  auto was = probes::parse_fingerprint_json(t.row->fingerprint);
  auto now = probes::parse_fingerprint_json(b.fingerprint);
  if (!was || !now) return true;  // an unreadable one cannot be told the same
  // Field by field: only a field both know that differs is another launch.
  // What is known for the first time (an Ollama tag loads on demand; a route
  // that failed before) is set on the row it was registered as.
  probes::FingerprintComparison c = probes::compare_fingerprints(*was, *now);
  if (c.changed) return true;
  const std::string merged = c.merged.to_json();
  if (merged != t.row->fingerprint && d_.store.set_fingerprint(t.row->id, merged)) t.row->fingerprint = merged;
  return false;
}

void Campaigns::on_build(const std::string& name, Result<probes::BuildIdentity> b, int64_t now) {
  Track* tp = track(name);
  if (!tp) return;  // removed by a reload meanwhile
  Track& t = *tp;
  t.build_read_in_flight = false;
  t.next_build_check_ms = now + t.cfg->settings.cadence.build_poll_ms;
  if (!b) {
    if (t.last_build_error != b.message()) d_.log->warn("{}: cannot read build: {}", name, b.message());
    t.last_build_error = b.message();
    // Never reachable for a whole smoke length: the candidate is blocked.
    if (!t.row && t.phase == Phase::ReadingBuild && t.first_build_attempt_ms &&
        now - *t.first_build_attempt_ms >= t.cfg->settings.stages.smoke_ms) {
      register_candidate(t, std::string(kUnknownBuild), now);
      if (t.row) end_with(t, VerdictState::Blocked, "cannot read the build: " + b.message(), now);
    }
    // Retry sooner while nothing is known yet.
    if (!t.row || t.row->build == kUnknownBuild)
      t.next_build_check_ms = now + std::min<int64_t>(t.cfg->settings.cadence.build_poll_ms, kSmokeRetryMs);
    return;
  }
  t.last_build_error.clear();
  t.managed.build_unread = false;
  const bool expected_new = std::exchange(t.managed.expect_new_build, false);
  const bool smoke_asked = std::exchange(t.managed.smoke_when_up, false);
  if (b->model && *b->model != t.cfg->model) {
    // A different model under the same URL is never merged into this candidate;
    // the identity probe rejects it with the evidence. Log it here too.
    d_.log->warn("{}: runtime reports model \"{}\", config says \"{}\"", name, *b->model, t.cfg->model);
  }
  const std::string known = t.row ? t.row->fingerprint : std::string();
  if (t.row && t.row->build == b->build && !fingerprint_changed(t, *b)) {  // unchanged
    // A field known for the first time (the cap of a fixed build's launch,
    // an argv readable now) may hold the running stage.
    if (t.row->fingerprint != known) check_launch_hold(t, now);
    if (expected_new)
      d_.log->info("{}: its executable changed but the runtime still reports build {}: nothing new to judge", name,
                   b->build);
    if (smoke_asked && t.phase != Phase::Staged) {  // soakctl start while the runtime was down
      t.stage.reset();
      t.from_build_change = false;
      start_stage(t, StageKind::Smoke, now);
    }
    return;
  }
  const bool had_build = t.row && t.row->build != kUnknownBuild;
  if (had_build) {
    const bool launch_only = t.row->build == b->build;
    json d;
    d["from"] = t.row->build;
    d["to"] = b->build;
    d["candidate"] = name;
    if (t.row->fingerprint != b->fingerprint) {
      d["from_fingerprint"] = summary_of(t.row->fingerprint);
      d["to_fingerprint"] = summary_of(b->fingerprint);
    }
    write_event(EventKind::BuildChange, t.row->id, d.dump(), now);
    if (launch_only) {
      d_.log->info("{}: launch changed ({} -> {}) under build {}", name, summary_of(t.row->fingerprint),
                   summary_of(b->fingerprint), b->build);
    } else {
      d_.log->info("{}: build changed {} -> {}", name, t.row->build, b->build);
    }
    if (t.phase == Phase::Staged || t.phase == Phase::WaitingCanary)
      end_with(t, VerdictState::Inconclusive,
               (launch_only ? "launch changed (" + summary_of(b->fingerprint) + ")" : "build replaced by " + b->build) +
                   " before the campaign finished",
               now);
  }
  register_candidate(t, b->build, now, b->fingerprint);
  if (!t.row) return;
  auto v = d_.store.latest_verdict(t.row->id);
  if (v && *v && (*v)->state != VerdictState::Running) {
    t.phase = Phase::Done;  // this build was judged before (e.g. a rollback to it)
    t.final_state = (*v)->state;
    return;
  }
  t.from_build_change = had_build;
  t.stage.reset();
  start_stage(t, StageKind::Smoke, now);
}

}  // namespace soak
