#include "tests/fake_runtime/cli.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace soak::fake {
namespace {

using json = nlohmann::json;

struct IntKnob {
  const char* name;
  int Knobs::*field;
  const char* help;
};
struct StrKnob {
  const char* name;
  std::string Knobs::*field;
  const char* help;
};

const IntKnob kIntKnobs[] = {
    {"slots", &Knobs::slots, "parallel slots, like llama-server --parallel"},
    {"ctx", &Knobs::ctx_per_slot, "context tokens per slot; longer prompts get 400 exceed_context_size_error"},
    {"reply-tokens", &Knobs::reply_tokens, "tokens of an ordinary answer (finish_reason stop)"},
    {"reasoning-tokens", &Knobs::reasoning_tokens, "reasoning tokens when enable_thinking is true"},
    {"server-max-tokens", &Knobs::server_max_tokens, "cap when a request has no max_tokens (0 = none; mlx-lm: 512)"},
    {"token-interval-ms", &Knobs::token_interval_ms, "milliseconds between streamed tokens"},
    {"prefill-ms-per-1k", &Knobs::prefill_ms_per_1k, "prefill milliseconds per 1000 prompt tokens not in the cache"},
    {"keepalive-interval-ms", &Knobs::keepalive_interval_ms, "keep-alive period (oMLX chunks, pings)"},
    {"prefill-ping-ms", &Knobs::prefill_ping_ms,
     "llama.cpp: `:` pings during prefill, stream opened at slot start (0 = off)"},
    {"stall-after-tokens", &Knobs::stall_after_tokens, "stall: tokens sent before the stream goes silent"},
    {"error-every", &Knobs::error_every, "burst-5xx: every Nth inference request starts a run of 500s"},
    {"error-run", &Knobs::error_run, "burst-5xx: length of each run of 500s"},
    {"stuck-slot-ms", &Knobs::stuck_slot_ms, "stuck-slot: how long a cancelled slot stays busy"},
    {"crash-after", &Knobs::crash_after, "crash: inference requests served before the crash"},
    {"draft-slowdown", &Knobs::draft_slowdown, "draft-slowdown: token interval multiplier"},
    {"leak-mb", &Knobs::leak_mb_per_request, "memory-leak: MB allocated and touched per inference request"},
    {"slow-pct", &Knobs::slow_pct, "prefill and token pacing take this % of their time (100 = as paced)"},
    {"slow-from-tokens", &Knobs::slow_from_tokens,
     "slow-pct applies to prompts of at least this many tokens (0 = all)"},
    {"cache-ram", &Knobs::cache_ram_mib, "llama-server --cache-ram: the host prompt cache's cap in MiB"},
    {"cache-fill-mib", &Knobs::cache_fill_mib, "the prompt cache keeps this many MiB more per inference request"},
    {"first-token-delay-ms", &Knobs::first_token_delay_ms,
     "every inference request waits this long before its prompt is read"},
    {"cold-load-ms", &Knobs::cold_load_ms, "omlx: first request after start or unload loads the model this long"},
    {"loading-ms", &Knobs::loading_ms, "503 'Loading model' for this long after start (any scenario)"},
    {"repetition-tokens", &Knobs::repetition_tokens, "repetition: length of the looping answer"},
    {"fail-above-tokens", &Knobs::fail_above_tokens, "large-prompt-5xx: prompts longer than this get HTTP 500"},
    {"drop-tools-above-tokens", &Knobs::drop_tools_above_tokens,
     "deep-tool-drop: prompts longer than this get a text answer instead of a tool call"},
    {"thinking-fail-turn", &Knobs::thinking_fail_turn,
     "thinking-5xx: thinking requests from this turn of a conversation on get HTTP 500"},
    {"background-load", &Knobs::background_load,
     "another client's requests kept in the runtime at all times, each holding a slot (any scenario)"},
    {"background-ms", &Knobs::background_ms, "how long each of another client's requests holds its slot"},
};

const StrKnob kStrKnobs[] = {
    {"model", &Knobs::model, "canonical model id"},
    {"alias-model", &Knobs::alias_model, "model-alias: the model string responses carry instead"},
    {"build", &Knobs::build, "build: b<N> or b<N>-<commit> (llama.cpp), a version elsewhere"},
    {"pooling", &Knobs::pooling,
     "llama.cpp: embedding or rerank serves only that route (llama-server --embedding / --reranking)"},
    {"answers", &Knobs::answers,
     "logprobs of non-streamed answers: steady (default), changed, near-tie, no-logprobs, not-top1, looping"},
    {"leak", &Knobs::leak, "markup-leak: what leaks into content: think (default), im-end, harmony, fffd, eos"},
    {"eos-token", &Knobs::eos_token, "llama.cpp /props eos_token (default <|im_end|>); what the eos leak writes"},
};

std::string underscored(std::string s) {
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

Status apply_knob(Knobs& k, std::string_view name, const std::string& value) {
  if (name == "leak" && !parse_leak(value))
    return make_error("--leak wants one of " + leak_names() + ", got '" + value + "'");
  for (const auto& s : kStrKnobs)
    if (name == s.name) {
      k.*(s.field) = value;
      return Status::Ok();
    }
  for (const auto& i : kIntKnobs)
    if (name == i.name) {
      int v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size() || v < 0)
        return make_error("--" + std::string(name) + " wants a non-negative integer, got '" + value + "'");
      k.*(i.field) = v;
      return Status::Ok();
    }
  return make_error("unknown option --" + std::string(name));
}

bool is_knob(std::string_view name) {
  for (const auto& s : kStrKnobs)
    if (name == s.name) return true;
  for (const auto& i : kIntKnobs)
    if (name == i.name) return true;
  return false;
}

using Overrides = std::vector<std::pair<std::string, std::string>>;

Result<ListenerConfig> make_listener(const std::string& host, int port, const std::string& scenario,
                                     const std::string& flavour, const Overrides& overrides) {
  auto s = parse_scenario(scenario);
  if (!s) return make_error("unknown scenario '" + scenario + "'; known: " + scenario_names());
  auto f = parse_flavour(flavour);
  if (!f) return make_error("unknown flavour '" + flavour + "'; known: " + flavour_names());
  ListenerConfig c = ListenerConfig::make(*s, *f);
  c.host = host;
  c.port = port;
  for (const auto& [name, value] : overrides) {
    Status st = apply_knob(c.knobs, name, value);
    if (!st.ok()) return st.error();
  }
  return c;
}

Result<int> parse_port(std::string_view s) {
  int port = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || p != s.data() + s.size() || port < 0 || port > 65535)
    return make_error("bad port '" + std::string(s) + "'");
  return port;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string json_scalar(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

Overrides knobs_from_json(const json& obj) {
  Overrides out;
  for (const auto& s : kStrKnobs)
    if (obj.contains(underscored(s.name))) out.emplace_back(s.name, json_scalar(obj[underscored(s.name)]));
  for (const auto& i : kIntKnobs)
    if (obj.contains(underscored(i.name))) out.emplace_back(i.name, json_scalar(obj[underscored(i.name)]));
  return out;
}

}  // namespace

Result<std::vector<ListenerConfig>> parse_config_json(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("listeners") || !doc["listeners"].is_array())
    return make_error("config must be a JSON object with a \"listeners\" array");
  Overrides defaults =
      doc.contains("defaults") && doc["defaults"].is_object() ? knobs_from_json(doc["defaults"]) : Overrides{};
  std::vector<ListenerConfig> out;
  for (const auto& l : doc["listeners"]) {
    if (!l.is_object()) return make_error("each listener must be a JSON object");
    Overrides o = defaults;
    for (auto& kv : knobs_from_json(l)) o.push_back(std::move(kv));
    std::string host = l.contains("host") ? json_scalar(l["host"]) : kLoopbackHost;
    auto port = parse_port(l.contains("port") ? json_scalar(l["port"]) : "0");
    if (!port.ok()) return port.error();
    auto c = make_listener(host, *port, l.contains("scenario") ? json_scalar(l["scenario"]) : "healthy",
                           l.contains("flavour") ? json_scalar(l["flavour"]) : "llama.cpp", o);
    if (!c.ok()) return c.error();
    out.push_back(std::move(*c));
  }
  return out;
}

Result<std::vector<ListenerConfig>> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = parse_config_json(ss.str());
  if (!parsed.ok()) return make_error(path + ": " + parsed.message());
  return parsed;
}

Result<CliOptions> parse_cli(const std::vector<std::string>& args) {
  CliOptions opts;
  std::string flavour = "llama.cpp";
  std::string scenario = "healthy";
  Overrides overrides;
  std::vector<std::string> listens;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h" || arg == "--help") {
      opts.help = true;
      return opts;
    }
    if (arg.rfind("--", 0) != 0) return make_error("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::string value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else {
      if (i + 1 >= args.size()) return make_error("--" + name + " needs a value");
      value = args[++i];
    }
    if (name == "listen") {
      listens.push_back(value);
    } else if (name == "config") {
      opts.config_path = value;
    } else if (name == "flavour" || name == "flavor") {
      flavour = value;
    } else if (name == "scenario") {
      scenario = value;
    } else if (is_knob(name)) {
      overrides.emplace_back(name, value);
    } else {
      return make_error("unknown option --" + name + " (see --help)");
    }
  }
  if (listens.empty() && opts.config_path.empty()) listens.push_back(std::string(kLoopbackHost) + ":0");
  for (const auto& spec : listens) {
    // [HOST:]PORT[:SCENARIO[:FLAVOUR]]
    auto parts = split(spec, ':');
    bool has_host = !parts[0].empty() && parts[0].find_first_not_of("0123456789") != std::string::npos;
    size_t at = has_host ? 1 : 0;
    if (parts.size() <= at || parts.size() > at + 3) return make_error("bad --listen '" + spec + "'");
    auto port = parse_port(parts[at]);
    if (!port.ok()) return port.error();
    auto c = make_listener(has_host ? parts[0] : kLoopbackHost, *port, parts.size() > at + 1 ? parts[at + 1] : scenario,
                           parts.size() > at + 2 ? parts[at + 2] : flavour, overrides);
    if (!c.ok()) return c.error();
    opts.listeners.push_back(std::move(*c));
  }
  return opts;
}

std::string usage_text() {
  std::string out =
      "usage: soak-fake-runtime [--listen [HOST:]PORT[:SCENARIO[:FLAVOUR]]]... [--config FILE]\n"
      "                         [--flavour F] [--scenario S] [knob options]\n"
      "\n"
      "A scriptable OpenAI-compatible server for soakd's tests and demo. Each --listen\n"
      "starts one listener (default 127.0.0.1:0, an ephemeral port); once bound, it prints\n"
      "exactly 'listening on HOST:PORT' on stdout, one line per listener, in order.\n"
      "--flavour and --scenario are the defaults for listeners that do not name their own;\n"
      "knob options apply to every --listen listener.\n"
      "\n"
      "  --config FILE   JSON {\"defaults\": {knobs}, \"listeners\": [{\"host\", \"port\",\n"
      "                  \"flavour\", \"scenario\", knobs}]}; knob keys use '_' (token_interval_ms).\n"
      "                  SIGHUP re-reads it and applies each listener's build and scenario.\n"
      "  --flavour F     " +
      flavour_names() +
      " (default llama.cpp)\n"
      "  --scenario S    " +
      scenario_names() + " (default healthy)\n";
  for (const auto& s : kStrKnobs)
    out += "  --" + std::string(s.name) + " V" + std::string(14 - std::string(s.name).size(), ' ') + s.help + "\n";
  for (const auto& i : kIntKnobs) {
    std::string n = i.name;
    out += "  --" + n + " N" + std::string(n.size() < 20 ? 20 - n.size() : 1, ' ') + i.help + "\n";
  }
  out +=
      "\n"
      "Defaults: model " +
      std::string(kDefaultModel) + ", build " + kDefaultBuild + ", " + std::to_string(kDefaultSlots) + " slots, " +
      std::to_string(kDefaultTokenIntervalMs) + " ms per token, " + std::to_string(kDefaultPrefillMsPer1k) +
      " ms prefill per 1K tokens (" + std::to_string(kPrefillScenarioMsPer1k) +
      " in prefill-cost), keep-alives every " + std::to_string(kDefaultKeepaliveIntervalMs) +
      " ms.\n"
      "\n"
      "Runtime control: POST /fake/control {\"build\": \"b9502\", \"scenario\": \"stall\", \"loading_ms\": 2000}\n"
      "changes a listener while it runs; GET /fake/stats returns its counters.\n"
      "{\"background_load\": 2, \"background_ms\": 9000} keeps another client's requests in its\n"
      "slots; {\"scenario\": \"stop-serving\"} stops serving for good: inference requests are\n"
      "accepted and never answered while /health and /v1/models answer, every slot is busy and\n"
      "the queue grows (/slots, /metrics).\n"
      "SIGTERM or SIGINT shuts down cleanly. The crash scenario kills the process (SIGKILL).\n";
  return out;
}

}  // namespace soak::fake
