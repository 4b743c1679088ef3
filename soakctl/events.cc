// `soakctl events`: the latest events, filtered by candidate and kind.
#include "soakctl/common.h"

#include <charconv>
#include <optional>
#include <string>
#include <system_error>

#include "core/duration.h"

namespace soak::soakctl {

namespace {

// A whole positive number, nothing after it ("10x" is refused, not read as 10).
std::optional<int64_t> parse_limit(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

int cmd_events(const Ctl& c, const Args& a, Store& st) {
  EventQuery q;
  if (auto k = a.get("kind")) {
    q.kind = parse_event_kind(*k);
    if (!q.kind) {
      c.err << "soakctl events: unknown --kind \"" << *k << "\" (one of: " << event_kind_names() << ")\n";
      return kCtlExitUsage;
    }
  }
  int64_t limit = kDefaultEventLimit;
  if (auto l = a.get("limit")) {
    auto n = parse_limit(*l);
    if (!n) {
      c.err << "soakctl events: --limit \"" << *l << "\" is not a positive whole number (e.g. --limit 200)\n";
      return kCtlExitUsage;
    }
    limit = *n;
  }
  if (auto name = a.get("candidate")) {
    auto row = lookup_candidate(c, st, *name, std::nullopt);
    if (!row) return kCtlExitStore;
    q.candidate_id = row->id;
    q.host_wide = HostWide::Include;
  }
  auto ev = st.events(q);
  if (!ev) {
    c.err << "soakctl: " << ev.message() << "\n";
    return kCtlExitStore;
  }
  size_t from = ev->size() > static_cast<size_t>(limit) ? ev->size() - static_cast<size_t>(limit) : 0;
  json arr = json::array();
  for (size_t i = from; i < ev->size(); ++i) {
    const Event& e = (*ev)[i];
    if (a.flag("json")) {
      json j;
      j["id"] = e.id;
      j["at"] = iso_utc(e.wall_ms);
      j["kind"] = to_string(e.kind);
      if (e.candidate_id) j["candidate_id"] = *e.candidate_id;
      j["detail"] = json::parse(e.detail_json, nullptr, false);
      if (e.duration_ms) j["duration_ms"] = *e.duration_ms;
      arr.push_back(std::move(j));
    } else {
      c.out << iso_utc(e.wall_ms) << "  " << to_string(e.kind);
      if (e.candidate_id) c.out << " (candidate row " << *e.candidate_id << ")";
      if (e.duration_ms) c.out << " " << format_duration(*e.duration_ms);
      c.out << "  " << e.detail_json << "\n";
    }
  }
  if (a.flag("json")) c.out << arr.dump(2) << "\n";
  return kCtlExitOk;
}

}  // namespace

const Command kEventsCommand{
    "events", Operand::None, {{"json"}, {"candidate", "kind", "limit"}}, OpenMode::ReadOnly, cmd_events};

}  // namespace soak::soakctl
