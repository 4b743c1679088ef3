#include "platform/runtime_processes.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "platform/procfs.h"

namespace soak {
namespace {

std::string_view basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_python(std::string_view program) {
  // python, python3, python3.12, Python (macOS framework builds)
  return starts_with(program, "python") || starts_with(program, "Python");
}

// What a process runs: the program (or Python script / module) and the
// arguments that follow it.
struct Invocation {
  std::string_view program;  // basename, or the module name after -m
  bool is_module = false;
  std::vector<std::string_view> args;
};

Invocation invocation_of(const ProcessInfo& p) {
  Invocation inv;
  std::string_view argv0 = p.argv.empty() ? std::string_view{} : basename(p.argv[0]);
  std::string_view exe = basename(p.path);
  std::string_view program = !argv0.empty() ? argv0 : (!exe.empty() ? exe : std::string_view(p.name));
  size_t next = 1;
  if (is_python(program) || is_python(exe)) {
    // Skip interpreter options to the script or `-m module`.
    while (next < p.argv.size()) {
      std::string_view a = p.argv[next];
      if (a == "-m" && next + 1 < p.argv.size()) {
        inv.program = p.argv[next + 1];
        inv.is_module = true;
        next += 2;
        break;
      }
      if (a == "-c") return inv;  // inline code: nothing to recognise
      if (a == "-W" || a == "-X") {
        next += 2;
        continue;
      }
      if (starts_with(a, "-")) {
        ++next;
        continue;
      }
      inv.program = basename(a);
      ++next;
      break;
    }
  } else {
    inv.program = program;
  }
  for (size_t i = next; i < p.argv.size(); ++i) inv.args.push_back(p.argv[i]);
  return inv;
}

std::string_view first_arg(const Invocation& inv) { return inv.args.empty() ? std::string_view{} : inv.args[0]; }

// One signature name against what a process runs: "name", "name*" (a
// prefix), either followed by " subcommand" (its first argument).
bool runs(const Invocation& inv, std::string_view name) {
  std::string_view sub;
  if (size_t space = name.find(' '); space != std::string_view::npos) {
    sub = name.substr(space + 1);
    name = name.substr(0, space);
  }
  const bool prefix = !name.empty() && name.back() == '*';
  if (prefix) name.remove_suffix(1);
  if (name.empty() || inv.program.empty()) return false;
  const bool named = prefix ? starts_with(inv.program, name) : inv.program == name;
  return named && (sub.empty() || first_arg(inv) == sub);
}

std::optional<RuntimeKind> identify_invocation(const Invocation& inv, RuntimeSignatures runtimes) {
  for (const RuntimeSignature& r : runtimes)
    for (std::string_view name : inv.is_module ? r.modules : r.programs)
      if (runs(inv, name)) return r.kind;
  return std::nullopt;
}

bool in_app(const ProcessInfo& p, std::string_view app) {
  if (app.empty()) return false;
  if (p.name == app) return true;
  std::string bundle = "/";  // appended, not "+": GCC 12 -O2 warns on the inlined concatenation
  bundle.append(app).append(".app/");
  return p.path.find(bundle) != std::string::npos;
}

bool same_tree(int pid, int root, const std::unordered_map<int, int>& parent_of) {
  // Walks pid's ancestry; bounded in case the table holds a cycle (pid reuse mid-walk).
  for (int hops = 0; hops < 64 && pid > 0; ++hops) {
    if (pid == root) return true;
    auto it = parent_of.find(pid);
    if (it == parent_of.end() || it->second == pid) return false;
    pid = it->second;
  }
  return false;
}

// Among matches, the one whose parent is not itself a match (a server and its
// forked workers resolve to the server); several such roots are ambiguous.
LocatedProcess pick_root(const std::vector<const ProcessInfo*>& matches, PidSource source, std::string_view what) {
  LocatedProcess out;
  if (matches.empty()) {
    out.detail = "no process " + std::string(what);
    return out;
  }
  std::unordered_set<int> pids;
  for (const auto* m : matches) pids.insert(m->pid);
  std::vector<int> roots;
  for (const auto* m : matches) {
    if (!pids.count(m->ppid)) roots.push_back(m->pid);
  }
  std::sort(roots.begin(), roots.end());
  if (roots.size() != 1) {
    out.detail = std::to_string(roots.size());
    out.detail.append(" processes ").append(what).append(" (pids");
    for (int r : roots) out.detail.append(" ").append(std::to_string(r));
    out.detail += "); set pid in the config";
    return out;
  }
  out.pid = roots[0];
  out.source = source;
  out.detail = "pid " + std::to_string(roots[0]) + " " + std::string(what);
  return out;
}

bool is_local_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "::" || host == "0.0.0.0" || starts_with(host, "127.");
}

bool has_signature(RuntimeSignatures runtimes, RuntimeKind kind) {
  for (const RuntimeSignature& r : runtimes)
    if (r.kind == kind && (!r.programs.empty() || !r.modules.empty() || !r.app.empty())) return true;
  return false;
}

bool names_secret(std::string_view arg) {
  std::string lower(arg);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : {"key", "token", "secret", "password"}) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string display_command(const ProcessInfo& p, size_t max_chars) {
  std::string out;
  bool mask_next = false;
  for (const auto& a : p.argv) {
    if (!out.empty()) out += ' ';
    bool option = !a.empty() && a.front() == '-';
    size_t eq = a.find('=');
    if (mask_next) {
      out += "***";
    } else if (option && eq != std::string::npos && names_secret(std::string_view(a).substr(0, eq))) {
      out += a.substr(0, eq + 1) + "***";
    } else {
      out += a;
    }
    mask_next = option && eq == std::string::npos && names_secret(a);
    if (out.size() > max_chars) {
      out.resize(max_chars);
      out += "...";
      break;
    }
  }
  if (out.empty()) out = !p.path.empty() ? p.path : p.name;
  return out;
}

std::optional<RuntimeKind> identify_engine(const ProcessInfo& p, RuntimeSignatures runtimes) {
  // An app runs its engines inside helpers of its bundle (LM Studio).
  for (const RuntimeSignature& r : runtimes)
    if (in_app(p, r.app)) return r.kind;
  // With argv hidden (another user's process) the executable name stands in
  // for argv[0], which still names the unambiguous engines.
  return identify_invocation(invocation_of(p), runtimes);
}

std::vector<EngineProcess> find_engines(const std::vector<ProcessInfo>& processes, RuntimeSignatures runtimes) {
  std::vector<EngineProcess> out;
  for (const auto& p : processes) {
    if (auto k = identify_engine(p, runtimes)) out.push_back(EngineProcess{p, *k});
  }
  return out;
}

std::vector<EngineProcess> other_engines(const std::vector<ProcessInfo>& processes, std::optional<int> candidate_pid,
                                         RuntimeSignatures runtimes) {
  std::vector<EngineProcess> engines = find_engines(processes, runtimes);
  if (!candidate_pid) return engines;
  std::unordered_map<int, int> parent_of;
  for (const auto& p : processes) parent_of[p.pid] = p.ppid;
  std::vector<EngineProcess> out;
  for (auto& e : engines) {
    int pid = e.process.pid;
    bool descendant = same_tree(pid, *candidate_pid, parent_of);
    bool ancestor = same_tree(*candidate_pid, pid, parent_of);
    if (!descendant && !ancestor) out.push_back(std::move(e));
  }
  return out;
}

std::optional<uint16_t> local_port_of(std::string_view url) {
  uint16_t port = 0;
  if (starts_with(url, "http://")) {
    port = 80;
    url.remove_prefix(7);
  } else if (starts_with(url, "https://")) {
    port = 443;
    url.remove_prefix(8);
  } else {
    return std::nullopt;
  }
  std::string_view authority = url.substr(0, url.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string_view host, port_text;
  if (starts_with(authority, "[")) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (!port_text.empty()) {
    auto p = procfs::parse_count(port_text);
    if (!p || *p == 0 || *p > 65535) return std::nullopt;
    port = static_cast<uint16_t>(*p);
  }
  if (!is_local_host(host)) return std::nullopt;
  return port;
}

std::string_view to_string(PidSource s) {
  switch (s) {
    case PidSource::Config: return "config";
    case PidSource::Port: return "port";
    case PidSource::Name: return "name";
    case PidSource::Runtime: return "runtime";
    case PidSource::NotFound: return "not_found";
  }
  return "not_found";
}

LocatedProcess locate_by_name(const std::vector<ProcessInfo>& processes, std::string_view name) {
  std::vector<const ProcessInfo*> matches;
  for (const auto& p : processes) {
    bool argv0 = !p.argv.empty() && basename(p.argv[0]) == name;
    if (p.name == name || basename(p.path) == name || argv0) matches.push_back(&p);
  }
  return pick_root(matches, PidSource::Name, "named " + std::string(name));
}

LocatedProcess locate_by_runtime(const std::vector<ProcessInfo>& processes, RuntimeKind kind,
                                 RuntimeSignatures runtimes) {
  std::vector<const ProcessInfo*> matches;
  for (const auto& p : processes) {
    auto k = identify_engine(p, runtimes);
    if (k && *k == kind) matches.push_back(&p);
  }
  return pick_root(matches, PidSource::Runtime, "running " + std::string(to_string(kind)));
}

LocatedProcess locate_candidate_process(Sampler& sampler, const CandidateConfig& c) {
  if (c.pid) {
    return LocatedProcess{c.pid, PidSource::Config, "pid " + std::to_string(*c.pid) + " from the config"};
  }
  std::string port_note;
  if (auto port = local_port_of(c.base_url)) {
    auto r = sampler.find_listening_pid(*port);
    if (r && r->has_value()) {
      return LocatedProcess{**r, PidSource::Port,
                            "pid " + std::to_string(**r) + " listening on port " + std::to_string(*port)};
    }
    port_note = r ? "nothing listens on port " + std::to_string(*port) : r.message();
  }
  auto procs = sampler.list_processes();
  LocatedProcess out;
  if (!procs) {
    out.detail = procs.message();
  } else if (c.process_name) {
    out = locate_by_name(*procs, *c.process_name);
  } else if (!has_signature(sampler.runtimes(), c.runtime)) {
    // Only the plain OpenAI-compatible runtime has none among soakd's own.
    out.detail = "a generic OpenAI-compatible runtime has no process signature; set pid or process_name";
  } else {
    out = locate_by_runtime(*procs, c.runtime, sampler.runtimes());
  }
  if (!out.pid && !port_note.empty()) out.detail = port_note + "; " + out.detail;
  return out;
}

CandidateArgv read_candidate_argv(Sampler& sampler, const CandidateConfig& c) {
  CandidateArgv out;
  LocatedProcess p = locate_candidate_process(sampler, c);
  out.found = p.detail;
  if (!p.pid) {
    out.error = "runtime process not found (" + p.detail + ")";
    return out;
  }
  // The process table is walked once per read: identity probes run minutes
  // apart, and no cheaper per-pid argv read is part of the Sampler seam.
  auto procs = sampler.list_processes();
  if (!procs) {
    out.error = "cannot list processes: " + procs.message();
    return out;
  }
  for (auto& pi : *procs) {
    if (pi.pid != *p.pid) continue;
    if (pi.argv.empty())
      out.error = "pid " + std::to_string(pi.pid) + "'s argv is not visible to this user";
    else
      out.argv = std::move(pi.argv);
    return out;
  }
  out.error = "pid " + std::to_string(*p.pid) + " is not in the process list (exited?)";
  return out;
}

}  // namespace soak
