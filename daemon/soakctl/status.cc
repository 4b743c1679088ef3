// `soakctl status`: one row per candidate with its stage, progress and latest verdict.
#include "daemon/soakctl/common.h"
#include "storage/lock.h"

#include "probes/engine_rows.h"
#include "schedules/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace soak::soakctl {

namespace {

std::string progress_bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar = "[";
  for (int i = 0; i < width; ++i) bar += i < filled ? "#" : ".";
  bar += "] ";
  bar += std::to_string(static_cast<int>(std::floor(fraction * 100))) + "%";
  return bar;
}

// The status table shows the start of a reason; `explain` shows all of it.
constexpr size_t kStatusReasonChars = 90;

std::string clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

// The seeds' prefix-reuse rule over the candidate's canary runs (cold, warm,
// prefix 1-3): reuse when the median of median(prefix)/cold is below
// probes::kPrefixReuseRatio (docs/DESIGN.md §3.10). nullopt: no complete run.
struct PrefixReuse {
  bool reuse = false;
  double median_ratio = 0;
  size_t runs = 0;
};
std::optional<PrefixReuse> prefix_reuse(Store& st, int64_t candidate_id) {
  ProbeQuery q;
  q.candidate_id = candidate_id;
  q.kind = ProbeKind::SharedPrefix;
  auto rows = st.probe_results(q);
  if (!rows) return std::nullopt;
  std::vector<double> ratios;
  for (const auto& r : *rows) {
    auto j = json::parse(r.extra_json, nullptr, false);
    if (j.is_object() && j.contains("reuse_ratio") && j["reuse_ratio"].is_number())
      ratios.push_back(j["reuse_ratio"].get<double>());
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  const double median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  return PrefixReuse{median < probes::kPrefixReuseRatio, median, n};
}

int cmd_status(const Ctl& c, const Args& a, Store& st) {
  auto rows = st.status();
  if (!rows) {
    c.err << "soakctl: " << rows.message() << "\n";
    return kCtlExitStore;
  }
  const int64_t now = c.clock.wall_ms();
  // What the store cannot say about itself: the running soakd cannot write to it.
  std::optional<std::string> note;
  if (auto path = store_path(a)) note = DaemonLock::running_note(*path);
  if (a.flag("json")) {
    json arr = json::array();
    for (const auto& r : *rows) {
      json j;
      j["candidate"] = r.candidate.name;
      j["model"] = r.candidate.model;
      j["runtime"] = to_string(r.candidate.runtime);
      j["build"] = r.candidate.build;
      j["base_url"] = r.candidate.base_url;
      j["candidate_id"] = r.candidate.id;
      j["stage"] = r.stage ? stage_json(*r.stage, now) : json(nullptr);
      j["verdict"] = r.verdict ? verdict_json(*r.verdict) : json(nullptr);
      if (auto reach = latest_reach(st, r.candidate.id)) j["context_reach"] = reach_json(*reach);
      if (auto p = prefix_reuse(st, r.candidate.id))
        j["prefix_reuse"] = {{"reuse", p->reuse}, {"median_ratio", p->median_ratio}, {"runs", p->runs}};
      arr.push_back(std::move(j));
    }
    c.out << arr.dump(2) << "\n";
    if (note) c.err << "soakd: " << *note << "\n";
    return kCtlExitOk;
  }
  if (note) c.out << "soakd: " << *note << "\n\n";
  if (rows->empty()) {
    c.out << "no candidates yet (soakd registers each candidate once it has read its build)\n";
    return kCtlExitOk;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %-24s %-10s %-18s %-7s %-19s %s\n", "CANDIDATE", "MODEL", "RUNTIME", "BUILD",
                "STAGE", "PROGRESS", "VERDICT");
  c.out << line;
  for (const auto& r : *rows) {
    std::string stage = r.stage ? std::string(to_string(r.stage->kind)) : "-";
    std::string progress = "-";
    if (r.stage) {
      if (r.stage->state == StageState::Running && r.stage->length_ms > 0)
        progress = progress_bar(static_cast<double>(now - r.stage->started_ms) / static_cast<double>(r.stage->length_ms), 10);
      else
        progress = std::string(to_string(r.stage->state));
    }
    std::string verdict = r.verdict ? std::string(to_string(r.verdict->state)) : "-";
    if (r.verdict && !r.verdict->reason.empty() && r.verdict->state != VerdictState::Running)
      verdict += ": " + clip(r.verdict->reason, kStatusReasonChars);
    if (r.verdict && r.verdict->is_override) verdict += " (override by " + r.verdict->who + ")";
    if (auto reach = latest_reach(st, r.candidate.id))
      verdict += " [reach " + size_label(reach->reach_tokens) + "/" + size_label(reach->configured_tokens) + "]";
    if (auto p = prefix_reuse(st, r.candidate.id)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " [prefix reuse %s %.2f]", p->reuse ? "yes" : "no", p->median_ratio);
      verdict += buf;
    }
    std::snprintf(line, sizeof line, "%-22s %-24s %-10s %-18s %-7s %-19s ", r.candidate.name.c_str(),
                  r.candidate.model.c_str(), std::string(to_string(r.candidate.runtime)).c_str(), r.candidate.build.c_str(), stage.c_str(),
                  progress.c_str());
    c.out << line << verdict << "\n";
  }
  return kCtlExitOk;
}

}  // namespace

const Command kStatusCommand{"status", Operand::None, {{"json"}, {}}, OpenMode::ReadOnly, cmd_status};

}  // namespace soak::soakctl
