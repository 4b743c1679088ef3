// A managed candidate's runtime launches as `soakctl explain` and `soakctl
// history` show them with its build (docs/DESIGN.md §4.8): what was run
// (secrets as ${NAME}), the executable, when it was ready, how it ended.
#include <string>

#include "core/byte_size.h"
#include "core/duration.h"
#include "soakctl/common.h"

namespace soak::soakctl {

namespace {

std::vector<std::string> argv_shown(const std::string& argv_json) {
  std::vector<std::string> out;
  const auto a = nlohmann::json::parse(argv_json, nullptr, false);
  if (!a.is_array()) return out;
  for (const auto& v : a) {
    if (v.is_string())
      out.push_back(v.get<std::string>());
    else if (v.is_object() && v.contains("from_env") && v["from_env"].is_string())
      out.push_back("${" + v["from_env"].get<std::string>() + "}");
  }
  return out;
}

std::string how_it_ended(const RuntimeLaunch& l) {
  std::string s(to_string(l.state));
  if (l.term_signal)
    s += ", signal " + std::to_string(*l.term_signal);
  else if (l.exit_status)
    s += ", exit status " + std::to_string(*l.exit_status);
  if (!l.detail.empty()) s += " — " + l.detail;
  return s;
}

}  // namespace

Result<std::vector<RuntimeLaunch>> launches_of(Store& st, int64_t candidate_id) {
  LaunchQuery q;
  q.candidate_id = candidate_id;
  return st.launches(q);
}

json launches_json(const std::vector<RuntimeLaunch>& ls) {
  json arr = json::array();
  for (const auto& l : ls) {
    json j;
    j["pid"] = l.pid;
    j["argv"] = argv_shown(l.argv_json);
    j["executable"] = l.executable;
    j["exe_size"] = l.exe_size;
    j["exe_hash"] = l.exe_hash;
    j["started"] = iso_utc(l.started_ms);
    j["ready"] = l.ready_ms ? json(iso_utc(*l.ready_ms)) : json(nullptr);
    j["state"] = to_string(l.state);
    j["ended"] = l.ended_ms ? json(iso_utc(*l.ended_ms)) : json(nullptr);
    j["exit_status"] = l.exit_status ? json(*l.exit_status) : json(nullptr);
    j["term_signal"] = l.term_signal ? json(*l.term_signal) : json(nullptr);
    j["detail"] = l.detail;
    j["log_tail"] = l.log_tail;
    arr.push_back(std::move(j));
  }
  return arr;
}

void print_launches(std::ostream& out, const std::vector<RuntimeLaunch>& ls, const std::string& indent) {
  for (const auto& l : ls) {
    std::string argv;
    for (const auto& a : argv_shown(l.argv_json)) argv += (argv.empty() ? "" : " ") + a;
    out << indent << "runtime launched " << iso_utc(l.started_ms) << ", pid " << l.pid << ": " << argv << "\n";
    out << indent << "  executable " << l.executable << " (" << format_bytes(l.exe_size) << ", content " << l.exe_hash
        << ")\n";
    out << indent << "  ";
    if (l.ready_ms)
      out << "ready after " << format_duration(*l.ready_ms - l.started_ms) << "; ";
    else
      out << "never ready; ";
    if (l.ended_ms)
      out << "ended " << iso_utc(*l.ended_ms) << " after " << format_duration(*l.ended_ms - l.started_ms) << ": ";
    out << how_it_ended(l) << "\n";
    if (!l.log_tail.empty() && l.state == LaunchState::Exited) {
      std::string tail = l.log_tail;
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      out << indent << "  log tail:\n";
      size_t start = 0;
      while (start <= tail.size()) {
        size_t nl = tail.find('\n', start);
        if (nl == std::string::npos) nl = tail.size();
        out << indent << "    " << tail.substr(start, nl - start) << "\n";
        start = nl + 1;
      }
    }
  }
}

}  // namespace soak::soakctl
