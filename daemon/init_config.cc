#include "daemon/init_config.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "probes/runtimes/catalog.h"
#include "probes/runtimes/runtime.h"
#include "probes/served_state.h"
#include "probes/text_util.h"

namespace soak {

namespace {

using probes::Runtime;

bool is_get(const probes::HttpRoute& r) { return r.method == "GET"; }

const InitAnswer* answer_at(const InitAnswers& a, std::string_view path) {
  auto it = a.find(std::string(path));
  return it == a.end() ? nullptr : &it->second;
}

bool answered_2xx(const InitAnswers& a, std::string_view path) {
  const InitAnswer* x = answer_at(a, path);
  return x && x->status >= 200 && x->status < 300;
}

bool wants_key(const InitAnswers& a, std::string_view path) {
  const InitAnswer* x = answer_at(a, path);
  return x && (x->status == 401 || x->status == 403);
}

// The runtime's own routes that prove it (a GET build route, served-state
// routes other than its model list).
std::vector<std::string_view> proving_paths(const Runtime& rt) {
  std::vector<std::string_view> out;
  if (rt.build_ask == probes::BuildAsk::Route && rt.build && is_get(*rt.build)) out.push_back(rt.build->path);
  for (const auto& s : rt.served)
    if (is_get(s.route) && s.route.path != rt.models.path) out.push_back(s.route.path);
  return out;
}

// A proving route answered, and not as this runtime would: another server.
// (401/403: the route wants an API key; that says nothing either way.)
bool contradicted(const Runtime& rt, const InitAnswers& a) {
  for (std::string_view p : proving_paths(rt)) {
    const InitAnswer* x = answer_at(a, p);
    if (!x || x->status == 0 || x->status == 401 || x->status == 403) continue;
    if (x->status < 200 || x->status >= 300) return true;
    if (rt.build && p == rt.build->path && rt.build_ask == probes::BuildAsk::Route) {
      if (!probes::parse_build(rt, x->body)) return true;
    } else {
      probes::ServedState s;
      if (!probes::read_served_answer(rt, p, x->body, "", s)) return true;
    }
  }
  return false;
}

bool plain_openai(const Runtime& rt) {
  return rt.build_ask == probes::BuildAsk::None && rt.served.empty() && rt.health.path == rt.models.path;
}

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

// "llama.cpp-8080", made unique among `taken`.
std::string candidate_name(RuntimeKind kind, uint16_t port, std::set<std::string>& taken) {
  std::string base;
  for (char c : std::string(to_string(kind)) + "-" + std::to_string(port))
    base += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '-';
  std::string name = base;
  for (int i = 2; !taken.insert(name).second; ++i) name = base + "-" + std::to_string(i);
  return name;
}

std::string join(const std::vector<std::string>& v, const char* sep, size_t max = 8) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max; ++i) out += (i ? sep : "") + v[i];
  if (v.size() > max) out += std::string(sep) + "... (" + std::to_string(v.size() - max) + " more)";
  return out;
}

// The "build" value for a runtime: over HTTP when it tells its build there.
std::string build_value(const Runtime& rt) {
  if (rt.build_ask == probes::BuildAsk::None) return R"({ "fixed": "unknown" })";
  return R"({ "from": "http" })";
}

void comment(std::string& out, const std::string& line) { out += "    // " + line + "\n"; }

void render_found(std::string& out, const FoundRuntime& f, const Runtime& rt, const std::string& name, bool last) {
  comment(out, std::string(to_string(f.kind)) + " at " + f.base_url + ": " + f.how);
  if (!f.models.listed.empty()) comment(out, "models listed: " + join(f.models.listed, ", "));
  if (!f.models.loaded.empty()) comment(out, "loaded, as it says: " + join(f.models.loaded, ", "));
  if (f.key_needed)
    comment(out, "warning: its model list GET " + std::string(rt.models.path) +
                     " wants an API key: put the name of the environment variable that holds the key in "
                     "\"api_key_env\" (never the key itself), the model id that list shows with the key in "
                     "\"model\", and set \"enabled\": true");
  else if (f.model.empty() && f.models.only_loaded)
    comment(out,
            "warning: it serves whatever model a request names and its model list is not what it serves; "
            "the model it was started with is not known (" +
                f.models.unproven_reason +
                "): put its --model value in \"model\" and set \"enabled\": true (any other id makes it "
                "load that model)");
  else if (f.model.empty())
    comment(out, "warning: it lists no model: load one, put its id in \"model\" and set \"enabled\": true");
  if (!f.build.empty()) comment(out, "build now: " + f.build);
  if (build_without_version(f.build))
    comment(out, "warning: build \"" + f.build +
                     "\" carries no version (built outside a git checkout?): every rebuild reads the same, so "
                     "soakd cannot see an upgrade; build it from a git checkout or use a release build");
  if (rt.build_ask == probes::BuildAsk::None)
    comment(out,
            "warning: it tells no build over HTTP: set \"build\": {\"command\": [\"<its program>\", \"--version\"]} "
            "so that soakd sees an upgrade (\"fixed\" never changes)");
  else if (f.build.empty())
    comment(out, "warning: its build could not be read now (" + f.build_error +
                     "); soakd tries again on every poll, or set \"build\": {\"command\": [...]}");
  if (!f.launch_summary.empty()) comment(out, "launch: " + f.launch_summary);
  if (f.ctx_per_slot && *f.ctx_per_slot < kDefaultMinServerCap)
    comment(out, "warning: its context is " + std::to_string(*f.ctx_per_slot) + " tokens per slot, below " +
                     std::to_string(kDefaultMinServerCap) +
                     " (limits.min_server_cap): long-context probes beyond it will fail; restart it with a larger "
                     "context per slot");
  if (f.slots) {
    comment(out, "slots: " + std::to_string(*f.slots) + ", as the runtime reports them");
  } else {
    comment(out,
            "warning: slot count unknown (the runtime does not say how many requests it serves at once): set "
            "\"slots\" when it serves more than one; bursts and the capacity check use it");
  }
  if (f.server_cap && *f.server_cap >= 0 && *f.server_cap < kDefaultMinServerCap) {
    const std::string advice = rt.lift_cap ? rt.lift_cap(*f.server_cap, std::nullopt, std::nullopt)
                                           : "it caps answers at " + std::to_string(*f.server_cap) + " tokens";
    comment(out, "warning: server cap: " + advice + "; until then the candidate is held at smoke (a cap below " +
                     std::to_string(kDefaultMinServerCap) +
                     " tokens cuts real answers), or set \"accept_server_cap\": true");
  } else if (f.server_cap && *f.server_cap < 0 && f.server_cap_env_unread) {
    comment(out,
            "warning: server cap unknown: its command line sets none, but it also takes flags from its environment, "
            "which soakd init does not read; check that environment (`ps eww -p <its pid>`), or set the cap on "
            "its command line; an answer it cuts short shows in the probes, with the fix");
  } else if (f.server_cap && *f.server_cap < 0) {
    comment(out, "server cap: none (answers without max_tokens are not cut by the server)");
  } else if (f.server_cap) {
    comment(out, "server cap: " + std::to_string(*f.server_cap) + " tokens when a request sends no max_tokens");
  } else {
    comment(out,
            "warning: server cap unknown (it does not say what ends an answer sent without max_tokens); an answer "
            "it cuts short shows in the probes, with the fix");
  }
  for (const auto& w : f.warnings) comment(out, "warning: " + w);
  out += "    {\n";
  out += "      \"name\": " + quoted(name) + ",\n";
  out += "      \"model\": " + quoted(f.model.empty() ? std::string("MODEL-ID") : f.model) + ",\n";
  out += "      \"runtime\": " + quoted(std::string(to_string(f.kind))) + ",\n";
  out += "      \"base_url\": " + quoted(f.base_url) + ",\n";
  if (f.key_needed) out += "      \"api_key_env\": \"SOAKD_API_KEY\",\n";
  if (f.slots && *f.slots >= 1) out += "      \"slots\": " + std::to_string(*f.slots) + ",\n";
  if (f.model.empty()) out += "      \"enabled\": false,\n";
  out += "      \"build\": " + build_value(rt) + "\n";
  out += last ? "    }\n" : "    },\n";
}

void render_example(std::string& out, const Runtime& rt, const std::string& name, bool last) {
  const std::string url = "http://127.0.0.1:" + std::to_string(*rt.default_port);
  // A runtime that tells what it serves only in its argv loads whatever a
  // request names; its model list is not what it serves (MLX-LM's lists the
  // Hugging Face cache).
  const std::string which = rt.served_from_argv
                                ? "the --model value it is started with (not an id from its model list " +
                                      std::string(rt.models.path) + ": any other id makes it load that)"
                                : "the model id its model list (" + std::string(rt.models.path) + ") shows";
  comment(out, "example: " + std::string(to_string(rt.kind)) + " on its default port " +
                   std::to_string(*rt.default_port) + " (not found on this host). Start it, put " + which +
                   " in \"model\", and set \"enabled\": true");
  if (!rt.notes.empty()) comment(out, std::string(rt.notes));
  if (rt.default_max_tokens && *rt.default_max_tokens >= 0 && *rt.default_max_tokens < kDefaultMinServerCap)
    comment(out, "warning: server cap: " +
                     (rt.lift_cap ? rt.lift_cap(*rt.default_max_tokens, std::nullopt, std::nullopt)
                                  : "it caps answers at " + std::to_string(*rt.default_max_tokens) + " tokens"));
  if (rt.build_ask == probes::BuildAsk::None)
    comment(out,
            "warning: it tells no build over HTTP: set \"build\": {\"command\": [\"<its program>\", \"--version\"]}");
  out += "    {\n";
  out += "      \"name\": " + quoted(name) + ",\n";
  out += "      \"model\": \"MODEL-ID\",\n";
  out += "      \"runtime\": " + quoted(std::string(to_string(rt.kind))) + ",\n";
  out += "      \"base_url\": " + quoted(url) + ",\n";
  out += "      \"enabled\": false,\n";
  out += "      \"build\": " + build_value(rt) + "\n";
  out += last ? "    }\n" : "    },\n";
}

}  // namespace

std::vector<std::string> init_paths(probes::RuntimeTable table) {
  std::vector<std::string> out;
  auto add = [&](std::string_view p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.emplace_back(p);
  };
  for (const Runtime* rt : table) {
    for (std::string_view p : proving_paths(*rt)) add(p);
    if (is_get(rt->health)) add(rt->health.path);
    if (is_get(rt->models)) add(rt->models.path);
  }
  return out;
}

std::optional<Recognition> recognise_runtime(probes::RuntimeTable table, const InitAnswers& a) {
  // A model list that wants an API key (401/403) still says an OpenAI-compatible server is there.
  auto lists_models = [&](const Runtime& rt) {
    return answered_2xx(a, rt.models.path) || wants_key(a, rt.models.path);
  };
  auto found = [&](const Runtime* rt, std::string how) {
    return Recognition{rt, std::move(how), wants_key(a, rt->models.path)};
  };
  // 1. Its build route names a build.
  for (const Runtime* rt : table) {
    if (!lists_models(*rt) || rt->build_ask != probes::BuildAsk::Route || !rt->build || !is_get(*rt->build)) continue;
    const InitAnswer* x = answer_at(a, rt->build->path);
    if (!x || x->status < 200 || x->status >= 300) continue;
    if (auto b = probes::parse_build(*rt, x->body))
      return found(rt, "GET " + std::string(rt->build->path) + " names its build " + *b);
  }
  // 2. A served-state route of its own reads as its answer (and no route of
  //    its own said otherwise: a JSON object is a llama.cpp /props answer to
  //    its reader, but not one without a build).
  for (const Runtime* rt : table) {
    if (!lists_models(*rt) || contradicted(*rt, a)) continue;
    for (const auto& s : rt->served) {
      if (!is_get(s.route) || s.route.path == rt->models.path) continue;
      const InitAnswer* x = answer_at(a, s.route.path);
      if (!x || x->status < 200 || x->status >= 300) continue;
      probes::ServedState st;
      if (probes::read_served_answer(*rt, s.route.path, x->body, "", st))
        return found(rt, "GET " + std::string(s.route.path) + " answers as its own");
    }
  }
  // 3. Only its health route: the first entry none of whose own routes said otherwise.
  for (const Runtime* rt : table) {
    if (!lists_models(*rt) || rt->health.path == rt->models.path || !is_get(rt->health)) continue;
    const InitAnswer* x = answer_at(a, rt->health.path);
    if (!x || x->status < 200 || x->status >= 300 || contradicted(*rt, a)) continue;
    if (rt->read_health(x->status, x->body).state != probes::HealthState::Up) continue;
    return found(rt, "only its health route GET " + std::string(rt->health.path) +
                         " answered as it does (weak evidence: check \"runtime\")");
  }
  // 4. An OpenAI-compatible model list, and nothing more.
  for (const Runtime* rt : table)
    if (plain_openai(*rt) && lists_models(*rt))
      return found(rt, "GET " + std::string(rt->models.path) +
                           (wants_key(a, rt->models.path) ? " wants an API key" : " answers") +
                           ", and nothing says which runtime it is (a plain OpenAI-compatible server)");
  return std::nullopt;
}

std::optional<std::string> loading_note(const InitAnswers& a) {
  for (const auto& [path, x] : a) {
    if (x.status != 503) continue;
    const probes::HealthVerdict v = probes::health_not_ok(x.status, x.body);
    if (v.state == probes::HealthState::Loading)
      return "still loading (GET " + path + ": " + v.detail + "); run soakd init again when it is ready";
  }
  return std::nullopt;
}

std::string unanswered_note(const InitAnswers& a) {
  if (a.empty()) return "nothing answered (not asked)";
  for (const auto& [path, x] : a)
    if (x.status == 0 && x.connected)
      return "connected, but the answer took longer than the " + std::to_string(kInitGetTimeoutMs / 1000) +
             " s limit (GET " + path + ": " + x.error +
             "): a busy or starting runtime; run soakd init again when it answers faster";
  return "nothing answered (" + a.begin()->second.error + ")";
}

ServedModels served_models(const Runtime& rt, const InitAnswers& a, const std::vector<std::string>& argv) {
  ServedModels m;
  if (const InitAnswer* x = answer_at(a, rt.models.path); x && x->status >= 200 && x->status < 300)
    m.listed = probes::parse_model_ids(x->body);
  probes::ServedState st;
  for (const auto& s : rt.served) {
    const InitAnswer* x = answer_at(a, s.route.path);
    if (!is_get(s.route) || !x || x->status < 200 || x->status >= 300) continue;
    (void)probes::read_served_answer(rt, s.route.path, x->body, "", st);
  }
  if (rt.served_from_argv) {
    m.only_loaded = true;
    if (argv.empty()) {
      m.unproven_reason = "its process's argv was not read";
    } else {
      const probes::ServedState from = rt.served_from_argv(argv);
      for (const auto& id : from.loaded) st.add_loaded(id);
      m.unproven_reason = from.unproven_reason.empty() ? "" : "its argv " + from.unproven_reason;
    }
  }
  m.loaded = st.loaded;
  return m;
}

std::string pick_model(const ServedModels& m) {
  for (const auto& l : m.loaded)
    if (std::find(m.listed.begin(), m.listed.end(), l) != m.listed.end()) return l;
  if (!m.loaded.empty()) return m.loaded.front();
  if (!m.listed.empty() && !m.only_loaded) return m.listed.front();
  return {};
}

bool may_read_build(const Runtime& rt, const ServedModels& m, const std::string& model) {
  if (model.empty()) return false;
  if (rt.build_ask != probes::BuildAsk::ChatAnswer) return true;
  return std::find(m.loaded.begin(), m.loaded.end(), model) != m.loaded.end();
}

bool cap_may_come_from_env(const Runtime& rt, const std::vector<std::string>& argv) {
  if (!rt.argv_from_env || !rt.fingerprint_from_argv) return false;
  if (argv.empty()) return true;
  probes::LaunchFingerprint bare, given;
  rt.fingerprint_from_argv({argv.front()}, bare);
  rt.fingerprint_from_argv(argv, given);
  return given.max_tokens_default == bare.max_tokens_default;
}

bool build_without_version(std::string_view build) {
  build = probes::text::trim(build);
  return probes::text::contains_ci(build, "unknown") || build == "b0" || build.rfind("b0-", 0) == 0;
}

std::string render_init_config(const InitSurvey& s, probes::RuntimeTable table) {
  std::string out;
  out += "// soakd configuration, written by `soakd init`. JSON with // comments; unknown keys are errors.\n";
  out += "// Looked at: " + (s.looked_at.empty() ? std::string("nothing") : s.looked_at) + ".\n";
  for (const auto& n : s.notes) out += "//   " + n + "\n";
  out +=
      "// Check it with `soakd check-config FILE`, try a candidate with `soakd probe --config FILE --candidate "
      "NAME`;\n// every key: README \"Configuration\" and examples/soakd.example.json.\n";
  out += "{\n";
  out += "  // Where the results and the log go (the defaults of this host).\n";
  out += "  \"store\": " + quoted(s.store_path) + ",\n";
  out += "  \"log\": " + quoted(s.log_path) + ",\n";
  out += "  // A baseline (\"baseline\": \"<another candidate's name>\") is compared against; without one only\n";
  out += "  // the absolute floors and the soak's own trends judge a build.\n";
  out += "  \"candidates\": [\n";
  std::set<std::string> taken;
  if (!s.found.empty()) {
    for (size_t i = 0; i < s.found.size(); ++i) {
      const FoundRuntime& f = s.found[i];
      const Runtime& rt = probes::runtime_in(table, f.kind);
      render_found(out, f, rt, candidate_name(f.kind, f.port, taken), i + 1 == s.found.size());
    }
  } else {
    out += "    // No runtime answered on this host: one example per runtime soakd knows, each disabled\n";
    out += "    // (soakd schedules no disabled candidate). Keep the ones you run, fill them in, enable them.\n";
    std::vector<const Runtime*> with_port;
    for (const Runtime* rt : table)
      if (rt->default_port) with_port.push_back(rt);
    for (size_t i = 0; i < with_port.size(); ++i)
      render_example(out, *with_port[i],
                     "example-" + candidate_name(with_port[i]->kind, *with_port[i]->default_port, taken),
                     i + 1 == with_port.size());
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace soak
