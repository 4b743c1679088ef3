// llama.cpp's llama-server (tools/server): everything soakd knows about it.
// Checked against a tree synced with ggml-org 82bb48500 (build 12074 for the
// later facts) and against the real captures in tests/fixtures/llama-server/.
#include <algorithm>
#include <charconv>

#include "probes/json_fields.h"
#include "probes/runtimes/argv.h"
#include "probes/runtimes/llama_cpp.h"
#include "probes/runtimes/runtime.h"
#include "probes/server_cap.h"
#include "probes/text_util.h"
#include "probes/transport/http_types.h"

namespace soak::probes {
namespace {

using jsonf::json;

// ---------------------------------------------------------------- health

// tools/server: every route answers 503 {"error":{"message":"Loading model"}}
// while loading (get-health-during-model-load.http), then /health is
// {"status":"ok"}.
HealthVerdict read_health(int http_status, std::string_view body) {
  if (is_2xx(http_status)) return read_health_status_member(http_status, body);
  // Older llama.cpp /health answered 503 "no slot available" when every slot
  // was busy: alive, just full.
  return health_not_ok(http_status, body, [](std::string_view message, const std::string& detail) {
    return text::contains_ci(message, "no slot available") ? std::optional<HealthVerdict>({HealthState::Up, detail})
                                                           : std::nullopt;
  });
}

// ---------------------------------------------------------------- server state

// tools/server/server-context.cpp get_props: build_info, model_path,
// model_alias, total_slots, default_generation_settings.n_ctx (per slot),
// is_sleeping; chat_template (common_chat_templates_source), with --jinja
// chat_template_tool_use when the model has one, and bos_token / eos_token
// (common_token_to_piece of llama_vocab_bos / _eos, special = true): the
// tokens an answer must not carry (probes/answer_check.h). llama-server
// writes them into content when started with --special, or when the EOS is
// not taken as the end of the turn.
Result<ServerProps> read_props(std::string_view body) {
  json j = jsonf::parse_object(body);
  if (j.is_null()) return make_error("/props answer is not a JSON object");
  ServerProps p;
  p.build_info = jsonf::get_string(j, "build_info").value_or("");
  p.model_alias = jsonf::get_string(j, "model_alias").value_or("");
  p.model_path = jsonf::get_string(j, "model_path").value_or("");
  if (auto n = jsonf::get_int(j, "total_slots")) p.total_slots = static_cast<int>(*n);
  if (const json* d = jsonf::member(j, "default_generation_settings")) p.n_ctx = jsonf::get_int(*d, "n_ctx");
  p.is_sleeping = jsonf::get_bool(j, "is_sleeping");
  auto add = [&p](std::string token) {
    if (p.template_tokens.size() < kMaxTemplateTokens &&
        std::find(p.template_tokens.begin(), p.template_tokens.end(), token) == p.template_tokens.end())
      p.template_tokens.push_back(std::move(token));
  };
  for (const char* key : {"chat_template", "chat_template_tool_use"})
    if (auto t = jsonf::get_string(j, key))
      for (auto& token : special_tokens_in_template(*t)) add(std::move(token));
  for (const char* key : {"bos_token", "eos_token"})
    if (auto t = jsonf::get_string(j, key); t && looks_special(*t)) add(std::move(*t));
  return p;
}

// /slots: is_processing, n_ctx, id_task, next_token (a one-element array)
// [0].n_decoded; `?fail_on_no_slot=1` answers 503 "no slot available" when
// every slot is busy.
Result<std::vector<SlotState>> read_slots(std::string_view body) {
  json j = jsonf::parse(text::trim(body));
  if (!j.is_array()) return make_error("/slots answer is not a JSON array: " + text::excerpt(text::trim(body), 80));
  std::vector<SlotState> out;
  for (const auto& s : j) {
    if (!s.is_object()) return make_error("/slots element is not an object");
    auto id = jsonf::get_int(s, "id");
    auto busy = jsonf::get_bool(s, "is_processing");
    if (!id || !busy) return make_error("/slots element lacks id or is_processing");
    SlotState st;
    st.id = static_cast<int>(*id);
    st.is_processing = *busy;
    st.n_ctx = jsonf::get_int(s, "n_ctx");
    st.id_task = jsonf::get_int(s, "id_task");
    if (const json* nt = jsonf::member(s, "next_token"); nt && nt->is_array() && !nt->empty())
      st.n_decoded = jsonf::get_int((*nt)[0], "n_decoded");
    out.push_back(st);
  }
  return out;
}

// ---------------------------------------------------------------- build identity

Result<std::string> read_build(std::string_view body) {
  SOAK_TRY_ASSIGN(auto props, read_props(body));
  if (props.build_info.empty()) return make_error("/props has no build_info");
  return props.build_info;
}

// `llama-server --version` prints "version: N (commit)" on stderr.
Result<std::string> read_version_output(std::string_view output) {
  SOAK_TRY_ASSIGN(auto b, parse_llama_server_version(output));
  return b.text();
}

// The model /props names: the first --alias, else the -m path.
std::optional<std::string> build_model(std::string_view body) {
  auto p = read_props(body);
  if (!p) return std::nullopt;
  if (!p->model_alias.empty()) return p->model_alias;
  if (!p->model_path.empty()) return p->model_path;
  return std::nullopt;
}

// ---------------------------------------------------------------- identity and the launch fingerprint

// get_props: model_path, model_alias, total_slots,
// default_generation_settings.n_ctx (per slot). Its params.n_predict is the
// sampling default, not -n (a server started with -n 64 still shows -1), so
// the max-tokens default is left to the argv.
Status read_served_props(std::string_view body, std::string_view, ServedState& s) {
  SOAK_TRY_ASSIGN(auto p, read_props(body));
  s.proof = IdentityProof::ServedName;
  s.add_loaded(p.model_alias);
  s.add_loaded(p.model_path);
  LaunchFingerprint& f = s.fingerprint;
  f.model = p.model_path.empty() ? p.model_alias : p.model_path;
  if (p.total_slots) f.slots = *p.total_slots;
  f.ctx_per_slot = p.n_ctx;
  if (f.ctx_per_slot && f.slots) f.ctx_total = *f.ctx_per_slot * *f.slots;
  return Status::Ok();
}

// server-context.cpp slots: each slot's `speculative` says a draft model (or
// another speculative mode) is attached.
Status read_served_slots(std::string_view body, std::string_view, ServedState& s) {
  json j = jsonf::parse(text::trim(body));
  if (!j.is_array()) return make_error("/slots answer is not a JSON array");
  bool any = false, seen = false;
  for (const auto& slot : j) {
    if (auto sp = jsonf::get_bool(slot, "speculative")) {
      seen = true;
      any = any || *sp;
    }
    if (!s.fingerprint.ctx_per_slot) s.fingerprint.ctx_per_slot = jsonf::get_int(slot, "n_ctx");
  }
  if (seen) s.fingerprint.speculative = any;
  if (!s.fingerprint.slots) s.fingerprint.slots = static_cast<int64_t>(j.size());
  return Status::Ok();
}

constexpr ServedRoute kServed[] = {{{"GET", "/props"}, read_served_props}, {{"GET", "/slots"}, read_served_slots}};

// What only llama-server's argv says: the KV cache type (-ctk/--cache-type-k,
// -ctv/--cache-type-v: "q8_0" when both agree, else "k=q8_0 v=f16") and the
// server's own cap on tokens when a request sends none
// (-n/--predict/--n-predict; -1 unlimited), and the host-RAM prompt cache's
// cap (-cram/--cache-ram, MiB; -1 unlimited, 0 off). A managed launch's
// LLAMA_ARG_N_PREDICT and LLAMA_ARG_CACHE_RAM come in as those flags before
// the argv's own (argv_from_env below); a discovered process's environment
// is not read.
// llama.cpp common/common.h cache_ram_mib: the prompt cache's default cap.
constexpr int64_t kDefaultCacheRamMib = 8192;

void fingerprint_from_argv(const std::vector<std::string>& given, LaunchFingerprint& f) {
  if (given.empty()) return;
  // common/arg.cpp: {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
  // {"-n", "--predict", "--n-predict"}; the last occurrence wins, and a "--"
  // option may be spelt with '_' for '-' (upstream normalises it too).
  std::vector<std::string> args = given;
  for (auto& a : args)
    if (a.rfind("--", 0) == 0) std::replace(a.begin(), a.end(), '_', '-');
  std::optional<std::string> k, v, n, cram;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto x = argv::any_flag_value(args, i, {"-cram", "--cache-ram"})) cram = x;
    if (auto x = argv::any_flag_value(args, i, {"-ctk", "--cache-type-k"})) k = x;
    if (auto x = argv::any_flag_value(args, i, {"-ctv", "--cache-type-v"})) v = x;
    if (auto x = argv::any_flag_value(args, i, {"-n", "--predict", "--n-predict"})) n = x;
  }
  // Not given: upstream's default (common/common.h cache_type_k/v
  // GGML_TYPE_F16, n_predict -1), so that dropping a flag is a change of
  // launch. An empty value is a launch value taken from soakd's environment
  // (not shown): unknown.
  const std::string kk = k.value_or("f16"), vv = v.value_or("f16");
  if (!kk.empty() && !vv.empty()) f.kv_cache_type = kk == vv ? kk : "k=" + kk + " v=" + vv;
  if (!n)
    f.max_tokens_default = -1;
  else if (auto x = argv::to_int(*n))
    f.max_tokens_default = *x;
  // common/common.h: int32_t cache_ram_mib = 8192 (8 GiB) unless given.
  if (!cram)
    f.cache_ram_mib = kDefaultCacheRamMib;
  else if (auto x = argv::to_int(*cram))
    f.cache_ram_mib = *x;
  f.add_source("argv");
}

// ---------------------------------------------------------------- metrics

// tools/server: /metrics exists only with --metrics; names carry the
// `llamacpp:` prefix (see the get-metrics-*.http captures). The queue: the
// requests in a slot and those deferred for lack of one (a request beyond
// the slots waits silently: no byte is written until a slot takes it).
constexpr std::string_view kRunning = "llamacpp:requests_processing";
constexpr std::string_view kWaiting = "llamacpp:requests_deferred";
constexpr std::string_view kKeyMetrics[] = {
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_seconds_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:tokens_predicted_seconds_total",
    "llamacpp:n_decode_total",
    kRunning,
    kWaiting,
    "llamacpp:n_busy_slots_per_decode",
};

// ---------------------------------------------------------------- server cap

// tools/server/server-context.cpp: a slot stops with STOP_TYPE_LIMIT when its
// context is full (prompt + answer + 1 >= n_ctx, without context shift) or when
// n_decoded reaches -n (params_base.n_predict; -1, the default, is unlimited).
std::string lift_cap(int64_t tokens, std::optional<int64_t> prompt_tokens, std::optional<int64_t> slot_ctx) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (slot_ctx && prompt_tokens && *prompt_tokens + tokens + 1 >= *slot_ctx)
    return "llama-server's slot context is full (n_ctx " + n(*slot_ctx) + " per slot: " + n(*prompt_tokens) +
           " prompt + " + n(tokens) + " answer tokens): start it with a larger -c (shared by its --parallel slots)";
  return "llama-server was started with -n " + n(tokens) + ": start it without -n or with -n -1";
}

// ---------------------------------------------------------------- tokenize

// POST /tokenize {"content": text} -> {"tokens": [...]} (with_pieces: [{id, piece}]).
std::string tokenize_body(std::string_view, std::string_view text) {
  json body;
  body["content"] = std::string(text);
  return jsonf::dump(body);
}

// ---------------------------------------------------------------- processes and launches

// tools/server/CMakeLists.txt: the server binary is `llama-server`.
constexpr std::string_view kPrograms[] = {"llama-server"};

// common/arg.cpp set_env: the environment variables that set the flags the
// launch fingerprint reads. Upstream reads the environment first and the
// command line after it, so a flag given on both is the command line's.
constexpr std::pair<std::string_view, std::string_view> kEnvFlags[] = {
    {"LLAMA_ARG_N_PREDICT", "--n-predict"},
    {"LLAMA_ARG_CACHE_RAM", "--cache-ram"},
};

// A value taken from soakd's own environment is not known here: empty, read
// as unknown (fingerprint_from_argv).
std::vector<std::string> argv_from_env(const LaunchSpec& s) {
  std::vector<std::string> out;
  for (const auto& [name, flag] : kEnvFlags) {
    auto it = s.env.find(std::string(name));
    if (it == s.env.end()) continue;
    out.emplace_back(flag);
    out.push_back(it->second.from_env.empty() ? it->second.text : std::string());
  }
  return out;
}

// Flags a soak needs that a llama-server launch lacks (the environment's
// LLAMA_ARG_N_PREDICT / LLAMA_ARG_CTX_SIZE, common/arg.cpp set_env, count as given).
std::vector<std::string> launch_warnings(const LaunchSpec& s) {
  std::vector<std::string> out;
  const auto args = literal_argv(s);
  if (args.empty() || argv::basename(args[0]).rfind("llama-server", 0) != 0) return out;
  if (!argv::has_option(args, {"-n", "--predict", "--n-predict"}) && !s.env.count("LLAMA_ARG_N_PREDICT"))
    out.push_back(
        "llama-server without -n (--n-predict) lets a runaway answer run until the context is full "
        "(soakd sends no max_tokens); add e.g. \"-n\", \"8192\"");
  if (!argv::has_option(args, {"-c", "--ctx-size"}) && !s.env.count("LLAMA_ARG_CTX_SIZE"))
    out.push_back(
        "llama-server without -c (--ctx-size) takes the model's full training context, and its "
        "memory; add e.g. \"-c\", \"131072\" for the sizes you test");
  return out;
}

}  // namespace

// ---------------------------------------------------------------- the build string

std::string LlamaBuild::text() const {
  std::string s = "b" + std::to_string(number);
  if (!commit.empty()) s += "-" + commit;
  return s;
}

std::optional<LlamaBuild> parse_llamacpp_build_info(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 2 || s.front() != 'b') return std::nullopt;
  LlamaBuild b;
  const char* first = s.data() + 1;
  auto [end, ec] = std::from_chars(first, s.data() + s.size(), b.number);
  if (ec != std::errc() || end == first) return std::nullopt;
  std::string_view rest(end, static_cast<size_t>(s.data() + s.size() - end));
  if (!rest.empty()) {
    if (rest.front() != '-' || rest.size() == 1) return std::nullopt;
    b.commit = std::string(rest.substr(1));
  }
  return b;
}

Result<LlamaBuild> parse_llama_server_version(std::string_view output) {
  // The line may be preceded by backend registration logs; look for it anywhere.
  size_t at = output.find("version: ");
  if (at == std::string_view::npos)
    return make_error("no 'version: <N> (<commit>)' line in llama-server --version output");
  std::string_view rest = output.substr(at + 9);
  LlamaBuild b;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), b.number);
  if (ec != std::errc() || end == rest.data())
    return make_error("llama-server --version: build number is not a number");
  rest.remove_prefix(static_cast<size_t>(end - rest.data()));
  if (rest.size() >= 2 && rest[0] == ' ' && rest[1] == '(') {
    size_t close = rest.find(')');
    if (close == std::string_view::npos) return make_error("llama-server --version: unterminated commit");
    b.commit = std::string(rest.substr(2, close - 2));
  }
  return b;
}

// ---------------------------------------------------------------- the entry

extern constinit const Runtime kLlamaCppRuntime;
constinit const Runtime kLlamaCppRuntime{
    .kind = RuntimeKind::LlamaCpp,
    .notes =
        "timings per answer (draft_n/draft_n_accepted only when > 0); finish chunk, then usage chunk with choices []",
    .default_port = 8080,  // common/common.h: int32_t port = 8080
    // /health and /v1/models stay public under --api-key; /props, /slots and
    // /metrics need the key.
    .health = {"GET", "/health"},
    .models = {"GET", "/v1/models"},
    .build = HttpRoute{"GET", "/props"},
    .props = HttpRoute{"GET", "/props"},
    .slots = HttpRoute{"GET", "/slots"},
    .metrics = HttpRoute{"GET", "/metrics"},
    .tokenize = HttpRoute{"POST", "/tokenize"},
    .read_health = read_health,
    .build_ask = BuildAsk::Route,
    .read_build = read_build,
    .read_version_output = read_version_output,
    .build_model = build_model,
    .read_props = read_props,
    .read_slots = read_slots,
    // The answer's model: the first --alias, else the -hf repo, else the -m
    // path as given; /props says what is loaded.
    .identity = IdentityEvidence::ResponseModel,
    .served = kServed,
    .fingerprint_from_argv = fingerprint_from_argv,
    .series = {.running = kRunning, .waiting = kWaiting},
    .key_metrics = kKeyMetrics,
    // -n / --n-predict: -1 (unlimited) by default; /props does not show it
    // (get_props builds its params from the sampling defaults only), so a
    // cut answer's count does.
    .lift_cap = lift_cap,
    .tokenize_body = tokenize_body,
    .tokenize_count = count_of_tokens,
    // Reasoning in reasoning_content (--reasoning-format `auto` by default);
    // usage chunk only when asked (the stream-no-usage capture has timings,
    // no usage); `:` pings every --sse-ping-interval (30 s) without a result.
    // server-context.cpp: a stream with return_progress gets a
    // prompt_progress chunk when the slot starts and after each batch of the
    // prompt.
    // Logprobs: "logprobs" + "top_logprobs" give choices[0].logprobs.content[]
    // of {id, token, bytes, logprob, top_logprobs[{id, token, bytes, logprob}]},
    // pre-sampling probabilities (tools/server/server-task.cpp
    // completion_token_output::probs_vector_to_json, non-stream chat answers).
    // Its README warns that cache_prompt can make results nondeterministic.
    // The probabilities are the raw logits' (server-context.cpp
    // populate_token_probs without post_sampling_probs): before the grammar of
    // a tool call or a JSON schema.
    .dialect = {.prefill_reports = PrefillReports::PromptProgressChunks,
                .grammar_logprobs = GrammarLogprobs::BeforeGrammar,
                .prompt_cache = PromptCacheSwitch::CachePromptField},
    .processes = {.programs = kPrograms},
    .launch_warnings = launch_warnings,
    .argv_from_env = argv_from_env,
};

}  // namespace soak::probes
