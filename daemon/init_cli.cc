// `soakd init`: the survey of this host's runtimes and the starter config
// (daemon/init_config.h has the pure parts, docs/DESIGN.md §4.12 the why).
#include "daemon/init_cli.h"

#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "core/clock.h"
#include "core/config.h"
#include "core/files.h"
#include "daemon/init_config.h"
#include "daemon/wiring.h"
#include "platform/runtime_processes.h"
#include "platform/sampler.h"
#include "probes/engine.h"
#include "probes/runtimes/catalog.h"
#include "probes/runtimes/runtime.h"
#include "probes/served_state.h"
#include "probes/transport/http_client.h"

namespace soak {

namespace {

namespace fs = std::filesystem;

Result<std::vector<uint16_t>> parse_ports(const std::string& list) {
  std::vector<uint16_t> out;
  size_t i = 0;
  while (i <= list.size()) {
    size_t comma = list.find(',', i);
    std::string item = list.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v < 1 || v > 65535)
      return make_error("--ports: \"" + item + "\" is not a TCP port (1-65535); e.g. --ports 8080,11434");
    if (std::find(out.begin(), out.end(), static_cast<uint16_t>(v)) == out.end())
      out.push_back(static_cast<uint16_t>(v));
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  if (out.size() > kMaxInitPorts)
    return make_error("--ports: " + std::to_string(out.size()) + " ports; soakd init asks at most " +
                      std::to_string(kMaxInitPorts));
  return out;
}

// "llama-server -m q.gguf (pid 10)": its command line, secrets masked, kept short.
constexpr size_t kInitCommandChars = 60;
std::string process_label(const ProcessInfo& p) {
  return display_command(p, kInitCommandChars) + " (pid " + std::to_string(p.pid) + ")";
}

// The GETs of one port, all at once, each bounded; the loop runs until every one has ended.
class GetBatch final : public TransferHandler {
 public:
  GetBatch(uv_loop_t* loop, HttpClient& http) : loop_(loop), http_(http) {}

  InitAnswers run(const std::string& base_url, const std::vector<std::string>& paths) {
    InitAnswers out;
    answers_ = &out;
    for (const auto& p : paths) {
      HttpRequest r;
      r.method = "GET";
      r.url = base_url + p;
      r.connect_timeout_ms = kInitConnectTimeoutMs;
      r.wall_timeout_ms = kInitGetTimeoutMs;
      r.stall_timeout_ms = kInitGetTimeoutMs;
      r.max_response_bytes = kInitMaxBodyBytes;
      r.body_mode = BodyMode::Buffer;
      TransferId id = http_.start(std::move(r), this);
      if (id == kNoTransfer) continue;
      paths_[id] = p;
    }
    while (!paths_.empty()) uv_run(loop_, UV_RUN_ONCE);
    answers_ = nullptr;
    return out;
  }

  void on_done(TransferId id, const TransferResult& r) override {
    auto it = paths_.find(id);
    if (it == paths_.end()) return;
    InitAnswer a;
    a.connected = r.times.connected_ns.has_value();
    if (r.reason == EndReason::Completed) {
      a.status = r.head.status;
      a.body = r.body;
    } else {
      a.error = std::string(to_string(r.reason));  // curl's own words carry timings: not in a file
    }
    (*answers_)[it->second] = std::move(a);
    paths_.erase(it);
  }

 private:
  uv_loop_t* loop_;
  HttpClient& http_;
  InitAnswers* answers_ = nullptr;
  std::map<TransferId, std::string> paths_;
};

}  // namespace

std::vector<InitTarget> init_targets(Sampler& sampler, const std::optional<std::vector<uint16_t>>& given,
                                     probes::RuntimeTable table, InitSurvey& survey) {
  std::vector<InitTarget> out;
  auto listed = sampler.list_processes();
  if (!listed) survey.notes.push_back("processes not listed: " + listed.message());
  const std::vector<ProcessInfo> processes = listed ? std::move(*listed) : std::vector<ProcessInfo>{};
  // A port is asked once per address (two runtimes may listen on 127.0.0.1:8080 and [::1]:8080), and
  // once per engine (one engine on both addresses is one runtime).
  auto has = [&](uint16_t port, bool ipv4, const std::string& process) {
    return std::any_of(out.begin(), out.end(), [&](const InitTarget& t) {
      return t.port == port && (t.ipv4 == ipv4 || (!process.empty() && t.process == process));
    });
  };
  // The engine listening on a port, if a recognised one does.
  auto hint = [&](InitTarget& t) {
    auto pid = sampler.find_listening_pid(t.port);
    if (!pid || !*pid) return;
    for (const auto& p : processes)
      if (p.pid == **pid) {
        t.process = process_label(p);
        t.process_kind = identify_engine(p, sampler.runtimes());
        t.argv = p.argv;
      }
  };
  if (given) {
    for (uint16_t port : *given) {
      InitTarget t{port, true, std::nullopt, {}, {}};
      hint(t);
      out.push_back(std::move(t));
    }
    survey.looked_at = "ports ";
    for (size_t i = 0; i < given->size(); ++i) survey.looked_at += (i ? ", " : "") + std::to_string((*given)[i]);
    survey.looked_at += " (--ports)";
    return out;
  }
  std::string engines_said;
  for (const EngineProcess& e : find_engines(processes, sampler.runtimes())) {
    auto ports = sampler.local_listening_ports(e.process.pid);
    if (!ports) {
      survey.notes.push_back(std::string(to_string(e.kind)) + " " + process_label(e.process) +
                             ": its ports are not known: " + ports.message());
      continue;
    }
    for (const LocalPort& lp : *ports) {
      const std::string label = process_label(e.process);
      if (has(lp.port, lp.ipv4, label)) continue;
      out.push_back(InitTarget{lp.port, lp.ipv4, e.kind, label, e.process.argv});
      engines_said += (engines_said.empty() ? "" : ", ") + std::to_string(lp.port);
    }
  }
  std::string defaults_said;
  for (const probes::Runtime* rt : table) {
    if (!rt->default_port || has(*rt->default_port, true, {})) continue;
    InitTarget t{*rt->default_port, true, std::nullopt, {}, {}};
    hint(t);
    out.push_back(std::move(t));
    defaults_said += (defaults_said.empty() ? "" : ", ") + std::to_string(*rt->default_port);
  }
  if (out.size() > kMaxInitPorts) {
    survey.notes.push_back(std::to_string(out.size() - kMaxInitPorts) + " more port(s) not asked (at most " +
                           std::to_string(kMaxInitPorts) + "; name them with --ports)");
    out.resize(kMaxInitPorts);
  }
  survey.looked_at = (engines_said.empty() ? std::string("no port of a running engine")
                                           : "the ports of the running engines (" + engines_said + ")") +
                     " and the runtimes' default ports (" + defaults_said + ")";
  return out;
}

namespace {

// Reads the build (and the launch fingerprint) as the daemon will.
void read_build_into(uv_loop_t* loop, probes::ProbeEngine& engine, FoundRuntime& f) {
  CandidateConfig c;
  c.name = "init";
  c.model = f.model;
  c.runtime = f.kind;
  c.base_url = f.base_url;
  c.build.source = BuildSource::Http;
  c.settings.limits.connect_timeout_ms = kInitConnectTimeoutMs * 2;
  c.settings.limits.wall_timeout_ms = kInitBuildTimeoutMs;
  c.settings.limits.stall_timeout_ms = kInitBuildTimeoutMs;
  bool done = false;
  engine.read_build(c, [&](Result<probes::BuildIdentity> b) {
    done = true;
    if (!b) {
      f.build_error = b.message();
      return;
    }
    f.build = b->build;
    if (auto fp = probes::parse_fingerprint_json(b->fingerprint); fp && !b->fingerprint.empty()) {
      f.launch_summary = fp->summary();
      f.ctx_per_slot = fp->ctx_per_slot;
      if (fp->slots) f.slots = fp->slots;
      if (fp->max_tokens_default) f.server_cap = fp->max_tokens_default;
    }
  });
  while (!done) uv_run(loop, UV_RUN_ONCE);
}

InitSurvey survey_host(Sampler& sampler, const std::optional<std::vector<uint16_t>>& given) {
  const probes::RuntimeTable table = probes::builtin_runtimes();
  InitSurvey survey;
  survey.store_path = default_store_path();
  survey.log_path = default_log_path();
  const std::vector<InitTarget> targets = init_targets(sampler, given, table, survey);
  const std::vector<std::string> paths = init_paths(table);

  SystemClock clock;
  uv_loop_t loop{};
  uv_loop_init(&loop);
  {
    HttpClient http(&loop, clock);
    auto engine = std::make_unique<probes::ProbeEngine>(&loop, http, clock, engine_options(sampler));
    GetBatch batch(&loop, http);
    for (const InitTarget& t : targets) {
      const std::string url = (t.ipv4 ? "http://127.0.0.1:" : "http://[::1]:") + std::to_string(t.port);
      const std::string where = "port " + std::to_string(t.port) + (t.process.empty() ? "" : " (" + t.process + ")");
      InitAnswers answers = batch.run(url, paths);
      bool any = std::any_of(answers.begin(), answers.end(), [](const auto& a) { return a.second.status != 0; });
      if (!any) {
        survey.notes.push_back(where + ": " + unanswered_note(answers));
        continue;
      }
      const probes::Runtime* rt = nullptr;
      std::string how;
      bool key_needed = false;
      if (t.process_kind) {
        rt = &probes::runtime_in(table, *t.process_kind);
        how = "its process is " + t.process;
        const InitAnswer& m = answers[std::string(rt->models.path)];
        key_needed = m.status == 401 || m.status == 403;
        if (auto loading = loading_note(answers); loading && !key_needed && (m.status < 200 || m.status >= 300)) {
          survey.notes.push_back(where + ": " + *loading);
          continue;
        }
        if (!key_needed && (m.status < 200 || m.status >= 300)) {
          survey.notes.push_back(where + ": " + std::string(to_string(rt->kind)) + "'s model list GET " +
                                 std::string(rt->models.path) + " did not answer 2xx (" +
                                 (m.status ? "HTTP " + std::to_string(m.status) : m.error) + "): not a server to test");
          continue;
        }
      } else if (auto r = recognise_runtime(table, answers)) {
        rt = r->runtime;
        how = r->how;
        key_needed = r->key_needed;
      } else if (auto loading = loading_note(answers)) {
        survey.notes.push_back(where + ": " + *loading);
        continue;
      } else {
        survey.notes.push_back(where + ": answers, but not as an OpenAI-compatible server (no model list)");
        continue;
      }
      FoundRuntime f;
      f.kind = rt->kind;
      f.port = t.port;
      f.base_url = url;
      f.how = how;
      f.key_needed = key_needed;
      f.models = served_models(*rt, answers, t.argv);
      f.model = key_needed ? std::string() : pick_model(f.models);
      if (rt->default_max_tokens) f.server_cap = *rt->default_max_tokens;
      std::string keyed;
      for (const auto& [path, a] : answers)
        if (a.status == 401 || a.status == 403)
          keyed += (keyed.empty() ? "" : ", ") + path + " (HTTP " + std::to_string(a.status) + ")";
      if (!keyed.empty())
        f.warnings.push_back("asked for an API key at " + keyed +
                             ": set \"api_key_env\" to the name of the variable that holds it");
      if (!f.model.empty() && f.models.loaded.empty() && rt->build_ask == probes::BuildAsk::ChatAnswer)
        f.warnings.push_back(
            "nothing it lists is loaded now: \"model\" is the first listed, which the first probe "
            "makes it load; put the model you mean to test in \"model\"");
      if (may_read_build(*rt, f.models, f.model)) {
        read_build_into(&loop, *engine, f);
        f.server_cap_env_unread = cap_may_come_from_env(*rt, t.argv);
      } else if (key_needed) {
        f.build_error = "not asked: its model list wants an API key";
      } else if (!f.model.empty()) {
        f.build_error = "not asked: only a chat answer tells it, and a chat would load " + f.model +
                        "; load a model, then run soakd init again";
      } else {
        f.build_error = "no model to ask with";
      }
      survey.found.push_back(std::move(f));
    }
    http.shutdown();
    engine.reset();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the client's handles close
  uv_loop_close(&loop);
  return survey;
}

// Creates `path` (and its folders), never over an existing file.
Status write_new_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      return make_error(path +
                        " exists; soakd init never overwrites a file: move it away, name another FILE, or "
                        "use --print");
    return make_error("cannot create " + path + ": " + std::strerror(errno));
  }
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return make_error("cannot write " + path + ": " + std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return make_error("cannot write " + path + ": " + std::strerror(errno));
  return {};
}

}  // namespace

int cmd_init(const Args& a) {
  const auto& pos = a.positionals();
  if (pos.size() > 2) {
    std::fprintf(stderr, "soakd init: give at most one FILE (see soakd --help)\n");
    return kExitUsage;
  }
  const bool print = a.flag("print");
  if (print && pos.size() == 2) {
    std::fprintf(stderr, "soakd init: --print writes to stdout; give FILE or --print, not both\n");
    return kExitUsage;
  }
  std::optional<std::vector<uint16_t>> ports;
  if (auto list = a.get("ports")) {
    auto p = parse_ports(*list);
    if (!p) {
      std::fprintf(stderr, "soakd init: %s\n", p.message().c_str());
      return kExitUsage;
    }
    ports = std::move(*p);
  }
  const std::string path = print ? std::string() : pos.size() == 2 ? pos[1] : default_config_path();
  // Before anything is asked: a file that is there stays as it is.
  std::error_code ec;
  if (!print && fs::exists(path, ec)) {
    std::fprintf(stderr,
                 "soakd init: %s exists; soakd init never overwrites a file: move it away, name another FILE, or use "
                 "--print\n",
                 path.c_str());
    return kExitFailure;
  }
  auto sampler = make_system_sampler(runtime_signatures());
  const InitSurvey survey = survey_host(*sampler, ports);
  const std::string text = render_init_config(survey, probes::builtin_runtimes());
  if (print) {
    std::fputs(text.c_str(), stdout);
    return kExitOk;
  }
  if (auto st = write_new_file(path, text); !st) {
    std::fprintf(stderr, "soakd init: %s\n", st.message().c_str());
    return kExitFailure;
  }
  std::printf("%s: %zu runtime(s) found; check it with: soakd check-config %s\n", path.c_str(), survey.found.size(),
              path.c_str());
  return kExitOk;
}

}  // namespace soak
