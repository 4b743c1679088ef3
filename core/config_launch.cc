// The config's "launch" block, "memory_budget" and "ab" (core/launch.h,
// docs/DESIGN.md §4.8): a managed candidate's argv, environment, working
// directory, timeouts, the rules that keep secrets out of the file, and
// whether its canary starts the previous build beside the new one.
#include <algorithm>
#include <cctype>

#include "core/byte_size.h"
#include "core/config_schema.h"

namespace soak::schema {

namespace {

constexpr const char* kFromEnvExample = "{\"from_env\": \"LLAMA_API_KEY\"}";

bool valid_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// A string, or {"from_env": "NAME"}.
std::optional<LaunchValue> read_value(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex) {
  if (v.is_string()) return LaunchValue{v.get<std::string>(), {}};
  if (v.is_object()) {
    if (v.size() != 1 || !v.contains("from_env")) {
      report_unknown_keys(ctx, v, p, {"from_env"});
      if (!v.contains("from_env"))
        ctx.err(p, "an object here names an environment variable: {\"from_env\": NAME}", kFromEnvExample);
      return std::nullopt;
    }
    const json& n = v["from_env"];
    if (!n.is_string() || !valid_env_name(n.get<std::string>())) {
      ctx.err(join_path(p, "from_env"), "must be the NAME of an environment variable (A-Z, 0-9, _)",
              "\"LLAMA_API_KEY\"");
      return std::nullopt;
    }
    return LaunchValue{{}, n.get<std::string>()};
  }
  ctx.err(p, std::string("must be a string or {\"from_env\": NAME}, not ") + json_type_name(v), ex);
  return std::nullopt;
}

// The option an argv element belongs to when it is a value ("--api-key", "X" or "--api-key=X").
void check_no_literal_secret(ReadContext& ctx, const LaunchSpec& s, const std::string& p) {
  for (size_t i = 1; i < s.argv.size(); ++i) {
    const LaunchValue& a = s.argv[i];
    if (!a.from_env.empty() || a.text.empty() || a.text[0] != '-') continue;
    const auto eq = a.text.find('=');
    const std::string opt = a.text.substr(0, eq);
    if (!names_a_secret(opt)) continue;
    if (eq != std::string::npos) {
      // The message never repeats the value: it is the secret.
      ctx.err(index_path(join_path(p, "argv"), i),
              "writes the value of " + opt +
                  " into the config; pass it as two elements, the value from soakd's "
                  "environment",
              "\"" + opt + "\", " + kFromEnvExample);
    } else if (i + 1 < s.argv.size() && s.argv[i + 1].from_env.empty()) {
      ctx.err(index_path(join_path(p, "argv"), i + 1),
              "is the value of " + opt +
                  ", a secret: never write it in the config; name the environment variable "
                  "that holds it",
              kFromEnvExample);
    }
  }
}

void read_argv(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, LaunchSpec& s) {
  if (!v.is_array() || v.empty()) {
    ctx.err(p, "must be a non-empty array: the program and its arguments, run without a shell", ex);
    return;
  }
  std::vector<LaunchValue> argv;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ip = index_path(p, i);
    auto a = read_value(ctx, v[i], ip, "\"--port\"");
    if (!a) return;
    if (i == 0 && (!a->from_env.empty() || a->text.empty())) {
      ctx.err(ip, "must be the program: a name looked up in PATH or a path (relative to the config file)",
              "\"llama-server\"");
      return;
    }
    if (i == 0 && a->text.find('/') != std::string::npos) a->text = resolve_path(ctx, a->text);
    argv.push_back(std::move(*a));
  }
  s.argv = std::move(argv);
}

void read_env(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, LaunchSpec& s) {
  if (!expect_object(ctx, v, p, ex)) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string ip = join_path(p, it.key());
    if (!valid_env_name(it.key())) {
      ctx.err(ip, "is not an environment variable name (A-Z, a-z, 0-9, _)", "\"LLAMA_ARG_N_GPU_LAYERS\": \"99\"");
      continue;
    }
    auto val = read_value(ctx, it.value(), ip, "\"99\"");
    if (!val) continue;
    if (val->from_env.empty() && names_a_secret(it.key())) {
      ctx.err(ip,
              it.key() +
                  " holds a secret: never write it in the config; name the environment variable that "
                  "holds it",
              kFromEnvExample);
      continue;
    }
    s.env[it.key()] = std::move(*val);
  }
}

void read_cwd(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, LaunchSpec& s) {
  if (auto d = read_string(ctx, v, p, ex)) s.cwd = resolve_path(ctx, *d);
}

void read_keep_running(ReadContext& ctx, const json& v, const std::string& p, const std::string&, LaunchSpec& s) {
  bool keep = false;
  if (read_bool(ctx, v, p, keep)) s.keep_running = keep ? KeepRunning::Yes : KeepRunning::No;
}

}  // namespace

const Section<LaunchSpec>& launch_section() {
  using S = LaunchSpec;
  static const Section<S> s{
      "{\"argv\": [\"llama-server\", \"-m\", \"/models/qwen.gguf\", \"--port\", \"8080\"], \"ready_timeout\": \"10m\"}",
      {
          required(custom<S>("argv", Kind::List,
                             "[\"llama-server\", \"-m\", \"/models/qwen.gguf\", \"--port\", \"8080\"]", read_argv)),
          custom<S>("env", Kind::Object,
                    "{\"LLAMA_ARG_N_GPU_LAYERS\": \"99\", \"HF_TOKEN\": " + std::string(kFromEnvExample) + "}",
                    read_env),
          custom<S>("cwd", Kind::String, "\"~/models\"", read_cwd),
          duration("ready_timeout", &S::ready_timeout_ms, "\"10m\""),
          duration("stop_timeout", &S::stop_timeout_ms, "\"30s\""),
          custom<S>("keep_running", Kind::Bool, "false", read_keep_running),
      }};
  return s;
}

void read_launch(ReadContext& ctx, const json& v, const std::string& p, const std::string&, CandidateConfig& c) {
  LaunchSpec s;
  const size_t before = ctx.errors.size();
  if (!read_section(ctx, v, p, launch_section(), s)) return;
  check_no_literal_secret(ctx, s, p);
  if (ctx.errors.size() == before) c.launch = std::move(s);
}

void read_memory_budget(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex,
                        CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  auto b = parse_byte_size(*s);
  if (!b)
    ctx.err(p, b.message(), ex + " or \"48GB\" or \"512MiB\"");
  else if (*b <= 0)
    ctx.err(p, "must be more than zero", ex);
  else
    c.memory_budget_bytes = *b;
}

void read_ab(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, CandidateConfig& c) {
  auto s = read_string(ctx, v, p, ex);
  if (!s) return;
  if (*s == "history")
    c.ab = AbMode::History;
  else if (*s == "interleaved")
    c.ab = AbMode::Interleaved;
  else
    ctx.err(p, "unknown value \"" + *s + "\"; one of: history, interleaved", ex);
}

namespace {

// "interleaved" starts the previous build's program with the candidate's argv
// on a port of its own: the argv must name a program that differs between
// builds, and give the port literally so that it can be replaced.
void check_ab(ReadContext& ctx, const std::string& path, const CandidateConfig& c) {
  if (c.ab != AbMode::Interleaved) return;
  const std::string p = join_path(path, "ab");
  if (!c.launch) {
    ctx.err(p,
            "\"interleaved\" starts the previous promoted build's program beside the new one, and soakd starts "
            "only a managed candidate's runtime (one with a \"launch\" block); add a launch block, or drop \"ab\" "
            "(an unmanaged candidate is compared with another candidate through \"baseline\")",
            "\"history\"");
    return;
  }
  if (const auto interpreter = launch_interpreter(*c.launch)) {
    ctx.err(p,
            "the launch runs " + *interpreter +
                ", an interpreter: a new build is a new package under the same program, so the previous build's "
                "program cannot be known; launch the runtime's own executable, or set \"history\"",
            "\"history\"");
    return;
  }
  if (argv_ports(*c.launch, c.runtime).empty())
    ctx.err(p,
            "\"interleaved\" starts the previous build on a port of its own, and the launch gives the runtime no "
            "port soakd can replace; give it in the argv (\"--port\", \"8081\") or set \"history\"",
            "\"history\"");
}

}  // namespace

void check_launch(ReadContext& ctx, const std::string& path, const CandidateConfig& c) {
  check_ab(ctx, path, c);
  if (!c.launch) return;
  if (c.pid)
    ctx.err(join_path(path, "pid"),
            "a managed candidate (with \"launch\") is sampled by the pid soakd started; drop \"pid\"", "");
  if (c.process_name)
    ctx.err(join_path(path, "process_name"),
            "a managed candidate (with \"launch\") is sampled by the pid soakd started; drop \"process_name\"", "");
  if (c.base_url.empty()) return;
  const Url u = split_url(c.base_url);
  if (!is_loopback_host(u.host)) {
    ctx.err(join_path(path, "base_url"),
            "soakd starts a managed runtime on this machine: base_url must be a loopback address, not " + u.host,
            "\"http://127.0.0.1:8081\"");
    return;
  }
  const auto ports = argv_ports(*c.launch, c.runtime);
  if (ports.empty()) return;
  for (const auto& ap : ports)
    if (ap.port == u.port) return;
  std::string said;
  for (const auto& ap : ports) said += (said.empty() ? "" : ", ") + ap.flag;
  ctx.err(join_path(path, "base_url"),
          "port " + std::to_string(u.port) + " differs from the port the launch argv gives the runtime (" + said +
              "); soakd would probe a port the runtime does not listen on",
          "\"http://127.0.0.1:" + std::to_string(ports.front().port) + "\"");
}

}  // namespace soak::schema

namespace soak {

std::string_view to_string(AbMode m) { return m == AbMode::Interleaved ? "interleaved" : "history"; }

CandidateConfig previous_build_candidate(const CandidateConfig& c, const std::string& program, uint16_t port) {
  CandidateConfig p = c;
  p.name = previous_runtime_name(c.name);
  p.base_url = url_with_port(c.base_url, port);
  p.pid.reset();
  p.process_name.reset();
  p.memory_budget_bytes.reset();
  p.ab = AbMode::History;
  if (c.launch) {
    p.launch = with_port(*c.launch, c.runtime, port);
    p.launch->argv.front() = LaunchValue{program, {}};
    p.launch->keep_running = KeepRunning::No;
  }
  return p;
}

}  // namespace soak
