#include "tests/fake_runtime/responder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>

#include "core/uv_util.h"
#include "tests/fake_runtime/logprobs.h"
#include "tests/fake_runtime/pooling.h"
#include "tests/fake_runtime/text_model.h"

namespace soak::fake {

using json = nlohmann::json;

// A one-shot timer whose callback is fixed at construction, so re-arming it from
// inside its own callback never replaces the function that is running.
class Alarm {
 public:
  Alarm(uv_loop_t* loop, std::function<void()> cb) : cb_(std::move(cb)) {
    uv_timer_init(loop, t_.get());
    t_.mark_initialized();
    t_.get()->data = this;
  }
  void arm(int64_t ms) {
    uv_timer_start(
        t_.get(), [](uv_timer_t* h) { static_cast<Alarm*>(h->data)->cb_(); },
        static_cast<uint64_t>(std::max<int64_t>(ms, 0)), 0);
  }
  void disarm() { uv_timer_stop(t_.get()); }

 private:
  UvHandle<uv_timer_t> t_;
  std::function<void()> cb_;
};

enum class Phase { Queued, Prefill, Decoding, Held };

struct Job {
  uint64_t id = 0;
  bool background = false;  // another client's request (Knobs::background_load): no connection
  std::shared_ptr<Connection> conn;
  Persist persist = Persist::KeepAlive;
  bool stream = false;
  bool include_usage = false;
  bool return_progress = false;  // llama.cpp: prompt_progress chunks during prefill
  bool lmstudio_v0 = false;      // LM Studio /api/v0/chat/completions: stats, model_info, runtime
  int max_tokens = -1;
  int top_logprobs = 0;  // the request's top_logprobs when it asked for logprobs (0: not asked)
  std::string prompt;    // the rendered prompt (the answer mode reads it)
  ReplyPlan plan;
  std::vector<uint32_t> prompt_ids;
  ChatIds ids;
  ToolCallOut tool;
  Phase phase = Phase::Queued;
  bool deferred = false;
  int slot = -1;
  size_t next_piece = 0;
  bool tool_opened = false;
  bool head_sent = false;
  int prefill_steps = 1;
  int prefill_step = 0;
  int64_t prefill_step_ms = 0;
  int eval_tokens = 0;
  int cache_tokens = 0;
  int64_t load_ms = 0;  // oMLX cold load waited for before the stream opens
  int64_t t_arrival = 0;
  int64_t t_slot = 0;
  int64_t t_first = 0;
  std::unique_ptr<Alarm> step;       // prefill steps, then token pacing
  std::unique_ptr<Alarm> keepalive;  // keep-alive frames
};

struct Slot {
  int id = 0;
  bool busy = false;
  std::vector<uint32_t> cache;  // prompt tokens of the last task: the prefix cache
  SlotView view;
  std::unique_ptr<Alarm> stuck;
};

namespace {

constexpr int kEmbeddingDims = 64;
constexpr size_t kIdChars = 32;
constexpr size_t kPageBytes = 4096;
constexpr const char* kMlxVersionTail = "-0.29.1-macOS-15.6-arm64-arm-64bit-applegpu_g16s";

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string alnum_id(uint64_t seed, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h = mix(h);
    out += kAlphabet[h % (sizeof kAlphabet - 1)];
  }
  return out;
}

ojson stats_json(const ListenerStats& s) {
  ojson j;
  j["port"] = s.port;
  j["build"] = s.build;
  j["scenario"] = s.scenario;
  j["http_requests"] = s.http_requests;
  j["inference_requests"] = s.inference_requests;
  j["completed"] = s.completed;
  j["cancels_seen"] = s.cancels_seen;
  j["errors_5xx"] = s.errors_5xx;
  j["loading_rejections"] = s.loading_rejections;
  j["deferred_total"] = s.deferred_total;
  j["stuck_releases"] = s.stuck_releases;
  j["processing"] = s.processing;
  j["deferred"] = s.deferred;
  j["max_processing"] = s.max_processing;
  j["held"] = s.held;
  j["leaked_bytes"] = s.leaked_bytes;
  j["crashed"] = s.crashed;
  j["model_loads"] = s.model_loads;
  j["routes"] = s.routes;
  return j;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

Responder::Responder(uv_loop_t* loop, const Clock& clock, ListenerConfig config, ResponderHost& host)
    : loop_(loop), clock_(clock), cfg_(std::move(config)), host_(host) {
  started_mono_ns_ = clock_.mono_ns();
  started_unix_ = clock_.wall_ms() / 1000;
  if (cfg_.flavour == Flavour::Omlx && cfg_.knobs.cold_load_ms == 0) omlx_loaded_.push_back(cfg_.knobs.model);
  loading_until_ns_ = started_mono_ns_ + static_cast<int64_t>(cfg_.knobs.loading_ms) * 1'000'000;
  reaper_ = std::make_unique<Alarm>(loop_, [this] { graveyard_.clear(); });
  for (int i = 0; i < std::max(cfg_.knobs.slots, 1); ++i) {
    auto s = std::make_unique<Slot>();
    s->id = i;
    s->view.id = i;
    s->view.n_ctx = cfg_.knobs.ctx_per_slot;
    s->view.speculative = cfg_.scenario == Scenario::DraftSlowdown;
    Slot* raw = s.get();
    s->stuck = std::make_unique<Alarm>(loop_, [this, raw] {
      raw->busy = false;
      raw->view.is_processing = false;
      ++stats_.stuck_releases;
      schedule();
      publish();
    });
    slots_.push_back(std::move(s));
  }
  stats_.build = cfg_.knobs.build;
  stats_.scenario = std::string(to_string(cfg_.scenario));
  top_up_background();
  if (cfg_.scenario == Scenario::StopServing) stop_serving();
}

Responder::~Responder() = default;

void Responder::set_port(int port) { stats_.port = port; }

void Responder::set_build(const std::string& build) {
  cfg_.knobs.build = build;
  stats_.build = build;
  publish();
}

void Responder::set_scenario(Scenario s) {
  const bool stopping = s == Scenario::StopServing && cfg_.scenario != Scenario::StopServing;
  cfg_.scenario = s;
  stats_.scenario = std::string(to_string(s));
  if (stopping) stop_serving();
  publish();
}

void Responder::stop_serving() {
  // What runs now never answers again: no token, no end, no release.
  for (auto& [id, job] : jobs_) {
    if (job->slot < 0) continue;
    job->step->disarm();
    job->keepalive->disarm();
    job->phase = Phase::Held;
  }
  // A free slot takes a task that never ends: every slot stays busy.
  for (auto& s : slots_) {
    if (s->busy) continue;
    s->busy = true;
    s->view.is_processing = true;
    s->view.has_task = true;
    s->view.id_task = next_task_id_++;
  }
  update_load_stats();
}

void Responder::top_up_background() {
  int live = 0;
  for (const auto& [id, job] : jobs_) live += job->background ? 1 : 0;
  // Fewer wanted: the waiting ones go first, the ones in a slot finish.
  for (auto it = queue_.begin(); live > cfg_.knobs.background_load && it != queue_.end(); ++it) {
    Job* j = find(*it);
    if (j && j->background) {
      retire(j->id);
      --live;
    }
  }
  for (; live < cfg_.knobs.background_load; ++live) {
    auto job = std::make_unique<Job>();
    const uint64_t id = next_job_id_++;
    job->id = id;
    job->background = true;
    job->t_arrival = clock_.mono_ns();
    job->step = std::make_unique<Alarm>(loop_, [this, id] { background_done(id); });
    job->keepalive = std::make_unique<Alarm>(loop_, [] {});
    jobs_.emplace(id, std::move(job));
    queue_.push_back(id);
  }
  schedule();
}

void Responder::background_done(uint64_t id) {
  Job* j = find(id);
  if (!j) return;
  release_slot(j->slot, false);
  retire(id);
  top_up_background();  // its next request queues behind what waits
  publish();
}

void Responder::start_loading(int loading_ms) {
  loading_until_ns_ = clock_.mono_ns() + static_cast<int64_t>(loading_ms) * 1'000'000;
}

void Responder::shutdown() {
  std::vector<uint64_t> ids;
  for (auto& [id, job] : jobs_) ids.push_back(id);
  for (uint64_t id : ids) retire(id);
  queue_.clear();
  for (auto& s : slots_) s->stuck->disarm();
}

bool Responder::loading() const { return clock_.mono_ns() < loading_until_ns_; }

int64_t Responder::loading_left_ms() const {
  return std::max<int64_t>(0, (loading_until_ns_ - clock_.mono_ns()) / 1'000'000);
}

std::string Responder::response_model(const json& request) const {
  if (cfg_.scenario == Scenario::ModelAlias)
    return cfg_.knobs.alias_model.empty() ? "models/" + cfg_.knobs.model + "-Q4_K_M.gguf" : cfg_.knobs.alias_model;
  if (cfg_.flavour == Flavour::MlxLm) return request.value("model", std::string("default_model"));
  return cfg_.knobs.model;
}

ServerView Responder::server_view() const {
  ServerView v;
  v.model = cfg_.knobs.model;
  v.build = cfg_.knobs.build;
  v.slots = static_cast<int>(slots_.size());
  v.ctx_per_slot = cfg_.knobs.ctx_per_slot;
  if (!cfg_.knobs.eos_token.empty()) v.eos_token = cfg_.knobs.eos_token;
  v.started_unix = started_unix_;
  v.speculative = cfg_.scenario == Scenario::DraftSlowdown;
  v.active_requests = stats_.processing;
  v.waiting_requests = stats_.deferred;
  v.total_requests = stats_.inference_requests;
  v.total_prompt_tokens = metrics_.prompt_tokens_total;
  v.total_completion_tokens = metrics_.tokens_predicted_total;
  v.uptime_s = (clock_.mono_ns() - started_mono_ns_) / 1'000'000'000;
  v.digest = cfg_.knobs.digest;
  v.kv_cache_type = cfg_.knobs.kv_cache_type;
  v.draining = draining_;
  v.cancelled_via_disconnect = stats_.cancels_seen;
  v.loaded_models = omlx_loaded_;
  v.draft_tokens_total = metrics_.draft_tokens_total;
  v.accepted_tokens_total = metrics_.accepted_tokens_total;
  v.drafts_total = metrics_.drafts_total;
  return v;
}

std::vector<SlotView> Responder::slot_views() const {
  std::vector<SlotView> out;
  for (const auto& s : slots_) out.push_back(s->view);
  return out;
}

int Responder::token_interval_ms() const {
  int base = cfg_.knobs.token_interval_ms;
  return cfg_.scenario == Scenario::DraftSlowdown ? base * cfg_.knobs.draft_slowdown : base;
}

void Responder::update_load_stats() {
  int busy = 0;
  for (const auto& s : slots_) busy += s->busy ? 1 : 0;
  int waiting = 0;
  for (uint64_t id : queue_) waiting += jobs_.count(id) ? 1 : 0;
  int held = 0;
  for (const auto& [id, job] : jobs_) held += job->phase == Phase::Held ? 1 : 0;
  stats_.processing = busy;
  stats_.deferred = waiting;
  stats_.held = held;
  stats_.max_processing = std::max(stats_.max_processing, busy);
  metrics_.requests_processing = busy;
  metrics_.requests_deferred = waiting;
}

void Responder::publish() {
  update_load_stats();
  host_.publish(stats_);
}

// ------------------------------------------------------------------ routing

void Responder::handle(HttpRequest req, std::shared_ptr<Connection> conn) {
  ++stats_.http_requests;
  ++stats_.routes[req.method + " " + req.path];
  Persist p = req.keep_alive ? Persist::KeepAlive : Persist::Close;
  try {
    if (req.path.rfind("/fake/", 0) == 0) {
      handle_fake(req, conn, p);
    } else if (req.method == "GET" && !cfg_.knobs.failing_path.empty() && req.path == cfg_.knobs.failing_path) {
      reply_json(conn, 500, ojson{{"error", "failing_path"}}, p);
    } else if (loading() && cfg_.flavour == Flavour::LlamaCpp) {
      // llama-server answers 503 on every route until the model is loaded.
      ++stats_.loading_rejections;
      reply_json(conn, 503, health_body(Flavour::LlamaCpp, true, server_view()), Persist::Close);
    } else {
      switch (cfg_.flavour) {
        case Flavour::LlamaCpp: handle_llama(req, conn, p); break;
        case Flavour::MlxLm: handle_mlx(req, conn, p); break;
        case Flavour::Omlx: handle_omlx(req, conn, p); break;
        case Flavour::Ollama: handle_ollama(req, conn, p); break;
        case Flavour::Vllm: handle_vllm(req, conn, p); break;
        case Flavour::RapidMlx: handle_rapid(req, conn, p); break;
        case Flavour::LmStudio: handle_lmstudio(req, conn, p); break;
      }
    }
  } catch (const std::exception& e) {
    // A request shape the fake did not expect (e.g. a field of the wrong type).
    if (conn->open() && conn->responding()) reply_error(conn, 400, e.what(), "invalid_request_error", Persist::Close);
  }
  publish();
}

void Responder::reply_json(const std::shared_ptr<Connection>& c, int status, const ojson& body, Persist p) {
  if (cfg_.flavour == Flavour::LlamaCpp && status >= 400) p = Persist::Close;
  if (status >= 500) ++stats_.errors_5xx;
  c->respond(status, response_headers(cfg_.flavour, BodyKind::Json, p), body.dump(), p);
}

void Responder::reply_error(const std::shared_ptr<Connection>& c, int status, const std::string& message,
                            const std::string& type, Persist p, const ojson& extra) {
  ojson body = error_body(cfg_.flavour, status, message, type);
  for (const auto& [k, v] : extra.items()) body["error"][k] = v;
  reply_json(c, status, body, p);
}

void Responder::not_found(const std::shared_ptr<Connection>& c, Persist p) {
  switch (cfg_.flavour) {
    case Flavour::LlamaCpp: {
      ojson e;
      e["message"] = "File Not Found";
      e["type"] = "not_found_error";
      e["code"] = 404;
      reply_json(c, 404, ojson{{"error", e}}, p);
      return;
    }
    case Flavour::MlxLm: c->respond(404, response_headers(cfg_.flavour, BodyKind::Json, p), "Not Found", p); return;
    case Flavour::Omlx:
    case Flavour::Vllm:
    case Flavour::RapidMlx: reply_json(c, 404, ojson{{"detail", "Not Found"}}, p); return;
    case Flavour::LmStudio:
      reply_json(c, 404, ojson{{"error", "Unexpected endpoint or method. (" + std::string("GET") + ")"}}, p);
      return;
    case Flavour::Ollama:
      c->respond(404, response_headers(cfg_.flavour, BodyKind::Text, p), "404 page not found", p);
      return;
  }
}

void Responder::handle_llama(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  const std::string& path = req.path;
  bool get = req.method == "GET";
  bool post = req.method == "POST";
  if (auto refusal = pooling_refusal(cfg_.knobs.pooling, req.method, path))
    return reply_error(c, 501, *refusal, "not_supported_error", p);
  if (get && (path == "/health" || path == "/v1/health"))
    return reply_json(c, 200, health_body(cfg_.flavour, false, server_view()), p);
  if (get && (path == "/v1/models" || path == "/models"))
    return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (get && path == "/props") return reply_json(c, 200, props_body(server_view()), p);
  if (get && path == "/slots") {
    bool any_free = std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
    if (req.query_param("fail_on_no_slot") == "1" && !any_free)
      return reply_error(c, 503, "no slot available", "unavailable_error", p);
    return reply_json(c, 200, slots_body(slot_views()), p);
  }
  if (get && path == "/metrics") {
    Headers h = response_headers(cfg_.flavour, BodyKind::Text, p);
    h.emplace_back("Process-Start-Time-Unix", std::to_string(started_unix_));
    c->respond(200, h, metrics_text(metrics_), p);
    return;
  }
  if (post && (path == "/v1/chat/completions" || path == "/chat/completions")) return chat(req, c, p);
  if (post && (path == "/v1/embeddings" || path == "/embeddings")) return embeddings(req, c, p);
  if (post && (path == "/v1/rerank" || path == "/rerank" || path == "/v1/reranking" || path == "/reranking"))
    return rerank(req, c, p);
  if (post && path == "/tokenize") return tokenize_route(req, c, p);
  not_found(c, p);
}

void Responder::handle_mlx(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  if (req.method == "GET" && req.path == "/health")
    return reply_json(c, 200, health_body(cfg_.flavour, false, server_view()), p);
  if (req.method == "GET" && req.path.rfind("/v1/models", 0) == 0)
    return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (req.method == "POST" && req.path == "/v1/chat/completions") return chat(req, c, p);
  not_found(c, p);
}

void Responder::handle_omlx(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  bool get = req.method == "GET";
  bool post = req.method == "POST";
  if (get && req.path == "/health")
    return reply_json(c, loading() ? 503 : 200, health_body(cfg_.flavour, loading(), server_view()), p);
  if (get && req.path == "/api/status") return reply_json(c, 200, omlx_status_body(server_view()), p);
  if (get && req.path == "/v1/models") return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (post && req.path == "/v1/chat/completions") return chat(req, c, p);
  if (post && req.path == "/v1/embeddings") return embeddings(req, c, p);
  if (post && req.path == "/v1/rerank") return rerank(req, c, p);
  not_found(c, p);
}

void Responder::handle_ollama(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  bool get = req.method == "GET" || req.method == "HEAD";
  bool post = req.method == "POST";
  if (get && req.path == "/") {
    c->respond(200, response_headers(cfg_.flavour, BodyKind::Text, p), "Ollama is running", p);
    return;
  }
  if (get && req.path == "/api/version") return reply_json(c, 200, ollama_version_body(server_view()), p);
  if (get && req.path == "/api/ps") return reply_json(c, 200, ollama_ps_body(server_view()), p);
  if (get && req.path == "/v1/models") return reply_json(c, 200, models_body(cfg_.flavour, server_view()), p);
  if (post && req.path == "/v1/chat/completions") return chat(req, c, p);
  if (post && req.path == "/v1/embeddings") return embeddings(req, c, p);
  not_found(c, p);
}

void Responder::handle_fake(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  if (req.method == "GET" && req.path == "/fake/stats") {
    update_load_stats();
    c->respond(200, response_headers(cfg_.flavour, BodyKind::Json, p), stats_json(stats_).dump(), p);
    return;
  }
  if (req.method == "POST" && req.path == "/fake/control") {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      c->respond(400, response_headers(cfg_.flavour, BodyKind::Json, p), R"({"error":"body must be a JSON object"})",
                 p);
      return;
    }
    if (body.contains("scenario")) {
      auto s = parse_scenario(body.value("scenario", ""));
      if (!s) {
        c->respond(400, response_headers(cfg_.flavour, BodyKind::Json, p),
                   ojson{{"error", "unknown scenario; known: " + scenario_names()}}.dump(), p);
        return;
      }
      set_scenario(*s);
    }
    control(body);
    ojson out{{"ok", true}, {"build", cfg_.knobs.build}, {"scenario", to_string(cfg_.scenario)}};
    c->respond(200, response_headers(cfg_.flavour, BodyKind::Json, p), out.dump(), p);
    return;
  }
  c->respond(404, response_headers(cfg_.flavour, BodyKind::Json, p), R"({"error":"unknown /fake route"})", p);
}

void Responder::control(const json& body) {
  if (!body.is_object()) return;
  if (body.contains("build")) set_build(body.value("build", cfg_.knobs.build));
  if (body.contains("failing_path")) cfg_.knobs.failing_path = body.value("failing_path", std::string());
  if (body.contains("digest")) cfg_.knobs.digest = body.value("digest", std::string());  // Ollama: a re-pull
  if (body.contains("draining")) draining_ = body.value("draining", false);              // Rapid-MLX: SIGTERM seen
  if (body.contains("kv_cache_type")) cfg_.knobs.kv_cache_type = body.value("kv_cache_type", cfg_.knobs.kv_cache_type);
  if (body.contains("answers")) cfg_.knobs.answers = body.value("answers", cfg_.knobs.answers);
  if (body.contains("leak") && parse_leak(body.value("leak", std::string())))
    cfg_.knobs.leak = body.value("leak", cfg_.knobs.leak);
  if (body.contains("ctx_per_slot")) cfg_.knobs.ctx_per_slot = body.value("ctx_per_slot", cfg_.knobs.ctx_per_slot);
  if (body.contains("loading_ms")) start_loading(body.value("loading_ms", 0));
  // oMLX: POST /v1/models/{id}/unload, or another model evicting this one.
  if (body.value("unload", false)) omlx_loaded_.clear();
  if (body.contains("loaded_models") && body["loaded_models"].is_array())
    omlx_loaded_ = body["loaded_models"].get<std::vector<std::string>>();
  drift::control(cfg_.knobs, body);
  first_token_delay_.control(body);
  if (body.contains("background_ms")) cfg_.knobs.background_ms = std::max(0, body.value("background_ms", 0));
  if (body.contains("background_load")) {
    cfg_.knobs.background_load = std::max(0, body.value("background_load", 0));
    top_up_background();
  }
}

// ---------------------------------------------------------------- inference

bool Responder::admit(const std::shared_ptr<Connection>& c, Persist p) {
  if (loading() && cfg_.flavour == Flavour::Omlx) {
    // omlx/engine_pool.py: a request for a model another request is loading
    // gets 409 with this wording ("loaded", not "loading").
    ++stats_.loading_rejections;
    reply_error(c, 409, "Model '" + cfg_.knobs.model + "' is already being loaded", "invalid_request_error", p);
    return false;
  }
  ++stats_.inference_requests;
  ++inference_seq_;
  if (cfg_.scenario == Scenario::CrashAfterN && inference_seq_ > static_cast<uint64_t>(cfg_.knobs.crash_after)) {
    stats_.crashed = true;
    publish();
    host_.crash();
    return false;
  }
  int every = cfg_.knobs.error_every;
  if (cfg_.scenario == Scenario::Burst5xx && every > 0 && inference_seq_ >= static_cast<uint64_t>(every) &&
      inference_seq_ % every < static_cast<uint64_t>(cfg_.knobs.error_run)) {
    reply_error(c, 500, "Internal server error", "server_error", p);
    return false;
  }
  if (cfg_.scenario == Scenario::MemoryLeak && cfg_.knobs.leak_mb_per_request > 0) {
    size_t bytes = static_cast<size_t>(cfg_.knobs.leak_mb_per_request) * 1024 * 1024;
    std::unique_ptr<char[]> block(new char[bytes]);
    // Touch every page so the allocation is resident, not just reserved.
    for (size_t i = 0; i < bytes; i += kPageBytes) block[i] = static_cast<char>(i / kPageBytes + 1);
    leaked_.push_back(std::move(block));
    stats_.leaked_bytes += bytes;
  }
  prompt_cache_.on_request(cfg_.knobs);
  return true;
}

void Responder::chat(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    if (cfg_.flavour == Flavour::LlamaCpp) {
      reply_error(c, 500, "[json.exception.parse_error.101] parse error: syntax error while parsing the request body",
                  "server_error", p);
    } else {
      reply_error(c, 400, "Invalid JSON in request body", "invalid_request_error", p);
    }
    return;
  }
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array())
    return reply_error(c, 400, "'messages' is required", "invalid_request_error", p);
  if (body.contains("response_format") && body["response_format"].is_object()) {
    std::string type = body["response_format"].value("type", "");
    if (type != "text" && type != "json_object" && type != "json_schema")
      return reply_error(c, 400, "response_format type must be one of \"text\" or \"json_object\", but got: " + type,
                         "invalid_request_error", p);
  }
  if (!admit(c, p)) return;

  std::string prompt = render_chat_prompt(body);
  auto job = std::make_unique<Job>();
  job->prompt_ids = token_ids(prompt);
  if (job->prompt_ids.size() > static_cast<size_t>(cfg_.knobs.ctx_per_slot)) {
    int n = static_cast<int>(job->prompt_ids.size());
    return reply_error(c, 400,
                       "request (" + std::to_string(n) + " tokens) exceeds the available context size (" +
                           std::to_string(cfg_.knobs.ctx_per_slot) + " tokens), try increasing it",
                       "exceed_context_size_error", p,
                       ojson{{"n_prompt_tokens", n}, {"n_ctx", cfg_.knobs.ctx_per_slot}});
  }
  if (cfg_.scenario == Scenario::LargePrompt5xx &&
      job->prompt_ids.size() > static_cast<size_t>(cfg_.knobs.fail_above_tokens)) {
    return reply_error(c, 500, "failed to process the prompt", "server_error", p);
  }
  if (cfg_.scenario == Scenario::Thinking5xx && thinking_enabled(body) &&
      conversation_turn(body) >= cfg_.knobs.thinking_fail_turn) {
    return reply_error(c, 500, "failed to render the chat template: reasoning left in the history", "server_error", p);
  }
  uint64_t id = next_job_id_++;
  job->id = id;
  job->conn = c;
  job->persist = p;
  job->stream = wants_stream(body);
  job->include_usage = wants_usage_in_stream(body);
  job->return_progress =
      cfg_.flavour == Flavour::LlamaCpp && body.contains("return_progress") && body["return_progress"] == true;
  job->max_tokens = requested_max_tokens(body).value_or(-1);
  job->plan = plan_reply(body, prompt, cfg_.scenario, cfg_.knobs);
  // A build's changed answers show where the golden set looks, its greedy
  // requests (temperature 0); the other probes' sampled answers stay steady's,
  // so that such a build fails the equivalence rule and nothing else (a
  // " CHANGED" piece in a strict-JSON probe's answer would be invalid JSON).
  const AnswerMode answers = parse_answer_mode(cfg_.knobs.answers).value_or(AnswerMode::Steady);
  if (body.contains("temperature") && body["temperature"].is_number() && body["temperature"].get<double>() == 0)
    shape_answer(answers, prompt, job->plan,
                 job->max_tokens > 0                ? std::optional<int>(job->max_tokens)
                 : cfg_.knobs.server_max_tokens > 0 ? std::optional<int>(cfg_.knobs.server_max_tokens)
                                                    : std::nullopt);
  // LM Studio and oMLX give no logprobs (lmstudio-ai/lms#60, omlx#1549).
  if (body.contains("logprobs") && body["logprobs"] == true && cfg_.flavour != Flavour::LmStudio &&
      cfg_.flavour != Flavour::Omlx)
    job->top_logprobs = body.contains("top_logprobs") && body["top_logprobs"].is_number_integer()
                            ? std::max(1, body["top_logprobs"].get<int>())
                            : 1;
  job->prompt = prompt;
  job->t_arrival = clock_.mono_ns();
  uint64_t seed = mix(id ^ (static_cast<uint64_t>(stats_.port) << 32));
  job->ids.id = "chatcmpl-" + alnum_id(seed, kIdChars);
  job->ids.created = clock_.wall_ms() / 1000;
  job->ids.model = response_model(body);
  job->lmstudio_v0 = cfg_.flavour == Flavour::LmStudio && req.path.rfind("/api/v0/", 0) == 0;
  // mlx_lm/server.py: only "default_model" (or the --model id itself) is what
  // was started; any other string loads those weights from the cache first.
  if (cfg_.flavour == Flavour::MlxLm && job->ids.model != "default_model" && job->ids.model != cfg_.knobs.model)
    ++stats_.model_loads;
  switch (cfg_.flavour) {
    case Flavour::LlamaCpp: job->ids.fingerprint = build_info(cfg_.knobs.build); break;
    case Flavour::MlxLm: job->ids.fingerprint = cfg_.knobs.build + kMlxVersionTail; break;
    case Flavour::Omlx:
    case Flavour::Vllm:
    case Flavour::RapidMlx:
    case Flavour::LmStudio: break;
    case Flavour::Ollama: job->ids.fingerprint = "fp_ollama"; break;
  }
  job->tool.name = job->plan.tool_name;
  job->tool.id = (cfg_.flavour == Flavour::LlamaCpp ? "" : "call_") + alnum_id(seed + 1, kIdChars);
  job->step = std::make_unique<Alarm>(loop_, [this, id] {
    Job* j = find(id);
    if (!j) return;
    if (j->phase == Phase::Prefill) {
      prefill_tick(id);
    } else {
      emit_next(id);
    }
  });
  job->keepalive = std::make_unique<Alarm>(loop_, [this, id] { keepalive_tick(id); });
  c->set_on_gone([this, id] { on_gone(id); });

  if (cfg_.flavour == Flavour::Omlx && omlx_loaded_.empty()) {
    // omlx/engine_pool.py get_engine: a model not loaded is loaded under the
    // pool's lock inside the request, before the stream opens.
    job->load_ms = cfg_.knobs.cold_load_ms;
    omlx_loaded_.push_back(cfg_.knobs.model);
  }
  const bool slot_free =
      queue_.empty() && std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
  if (cfg_.scenario == Scenario::ResetOverSlots && !slot_free) {
    // A runtime shedding what it cannot admit: the connection goes, no status line.
    c->abort();
    return;
  }
  Job& j = *job;
  jobs_.emplace(id, std::move(job));
  if (cfg_.flavour == Flavour::Omlx && j.stream && j.load_ms == 0) {
    // oMLX opens the stream at once and sends a keepalive chunk before any work.
    send_head(j);
    send_event(j, omlx_keepalive_chunk(j.ids.id));
  }
  queue_.push_back(id);
  schedule();
  if (j.phase == Phase::Queued) {
    j.deferred = true;
    ++stats_.deferred_total;
  }
}

void Responder::embeddings(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("input"))
    return reply_error(c, 400, "\"input\" must be provided", "invalid_request_error", p);
  if (!admit(c, p)) return;
  std::vector<std::string> inputs;
  if (body["input"].is_array()) {
    for (const auto& x : body["input"]) inputs.push_back(text_of(x));
  } else {
    inputs.push_back(text_of(body["input"]));
  }
  ojson data = ojson::array();
  size_t tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tokens += count_tokens(inputs[i]);
    ojson e;
    // UnstablePooling: the request's sequence number salts every vector.
    const std::string salt = cfg_.scenario == Scenario::UnstablePooling ? std::to_string(inference_seq_) : "";
    e["embedding"] = embed(inputs[i] + salt, kEmbeddingDims);
    e["index"] = i;
    e["object"] = "embedding";
    data.push_back(std::move(e));
  }
  pooling_reply(body, tokens, "data", std::move(data), c, p);
}

void Responder::rerank(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("query") || !body.contains("documents") || !body["documents"].is_array())
    return reply_error(c, 400, "\"query\" and \"documents\" must be provided", "invalid_request_error", p);
  if (!admit(c, p)) return;
  std::string query = text_of(body["query"]);
  std::vector<std::pair<double, size_t>> scored;
  size_t tokens = count_tokens(query);
  for (size_t i = 0; i < body["documents"].size(); ++i) {
    std::string doc = text_of(body["documents"][i]);
    tokens += count_tokens(doc);
    scored.emplace_back(relevance(query, doc), i);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (cfg_.scenario == Scenario::UnstablePooling && inference_seq_ % 2 == 0) std::reverse(scored.begin(), scored.end());
  size_t top_n = body.value("top_n", scored.size());
  ojson results = ojson::array();
  for (size_t k = 0; k < std::min(top_n, scored.size()); ++k)
    results.push_back(ojson{{"index", scored[k].second}, {"relevance_score", scored[k].first}});
  pooling_reply(body, tokens, "results", std::move(results), c, p);
}

void Responder::pooling_reply(const json& request, size_t tokens, const char* key, ojson items,
                              const std::shared_ptr<Connection>& c, Persist p) {
  ojson out;
  out["model"] = response_model(request);
  out["object"] = "list";
  out["usage"] = ojson{{"prompt_tokens", tokens}, {"total_tokens", tokens}};
  out[key] = std::move(items);
  ++stats_.completed;
  reply_json(c, 200, out, p);
}

void Responder::tokenize_route(const HttpRequest& req, const std::shared_ptr<Connection>& c, Persist p) {
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("content"))
    return reply_error(c, 500, "\"content\" must be provided", "server_error", p);
  bool pieces = body.value("with_pieces", false);
  ojson tokens = ojson::array();
  for (auto& t : tokenize(text_of(body["content"]))) {
    if (pieces) {
      tokens.push_back(ojson{{"id", t.id}, {"piece", t.piece}});
    } else {
      tokens.push_back(t.id);
    }
  }
  reply_json(c, 200, ojson{{"tokens", tokens}}, p);
}

// ------------------------------------------------------------ job lifecycle

Job* Responder::find(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

void Responder::schedule() {
  // A runtime that stopped serving lets nothing out of its queue.
  if (cfg_.scenario == Scenario::StopServing) return update_load_stats();
  while (!queue_.empty()) {
    Job* j = find(queue_.front());
    if (!j) {
      queue_.pop_front();
      continue;
    }
    // Like llama-server: among idle slots prefer the one whose cache shares the
    // longest prefix with the prompt.
    int best = -1;
    size_t best_lcp = 0;
    for (const auto& s : slots_) {
      if (s->busy) continue;
      size_t lcp = common_prefix(s->cache, j->prompt_ids);
      if (best < 0 || lcp > best_lcp) {
        best = s->id;
        best_lcp = lcp;
      }
    }
    if (best < 0) break;
    queue_.pop_front();
    begin(*j, best);
  }
  update_load_stats();
}

void Responder::begin(Job& job, int slot) {
  Slot& s = *slots_[slot];
  s.busy = true;
  job.slot = slot;
  job.phase = Phase::Prefill;
  job.t_slot = clock_.mono_ns();
  if (job.background) {
    // Another client's answer: its slot is busy for background_ms, nothing is written.
    job.phase = Phase::Decoding;
    s.cache.clear();
    s.view.is_processing = true;
    s.view.has_task = true;
    s.view.id_task = next_task_id_++;
    s.view.n_decoded = 0;
    job.step->arm(cfg_.knobs.background_ms);
    update_load_stats();
    return;
  }
  int prompt_n = static_cast<int>(job.prompt_ids.size());
  // llama-server always evaluates at least the last prompt token, even on an exact repeat.
  int lcp = static_cast<int>(common_prefix(s.cache, job.prompt_ids));
  job.cache_tokens = std::max(0, std::min(lcp, prompt_n - 1));
  job.eval_tokens = prompt_n - job.cache_tokens;
  s.cache = job.prompt_ids;

  SlotView& v = s.view;
  v.is_processing = true;
  v.has_task = true;
  v.id_task = next_task_id_++;
  v.n_prompt_tokens = prompt_n;
  v.n_prompt_tokens_processed = job.eval_tokens;
  v.n_prompt_tokens_cache = job.cache_tokens;
  v.max_tokens = job.max_tokens;
  v.stream = job.stream;
  v.n_decoded = 0;
  v.n_remain = job.max_tokens;

  int64_t prefill_ms = drift::scaled_ms(cfg_.knobs, job.prompt_ids.size(),
                                        static_cast<int64_t>(job.eval_tokens) * cfg_.knobs.prefill_ms_per_1k / 1000);
  // mlx-lm and Ollama accept requests while the model loads and answer late instead of 503.
  if (cfg_.flavour == Flavour::MlxLm || cfg_.flavour == Flavour::Ollama) prefill_ms += loading_left_ms();
  prefill_ms += job.load_ms;
  if (!job.background) prefill_ms += first_token_delay_.on_start(cfg_.knobs);
  job.prefill_steps = 1;
  const bool llama_progress = job.stream && job.return_progress;
  if ((cfg_.flavour == Flavour::MlxLm && job.stream) || llama_progress) {
    // Progress comes per prefill step (llama.cpp: per batch; the same 2048 tokens here).
    job.prefill_steps = std::max(1, (job.eval_tokens + kMlxLmPrefillStepTokens - 1) / kMlxLmPrefillStepTokens);
    send_head(job);  // mlx-lm and llama.cpp open the stream before prompt processing reports progress
  }
  if (llama_progress) {
    const int total = static_cast<int>(job.prompt_ids.size());
    send_event(job, chunk_prompt_progress(job.ids, total, job.cache_tokens, job.cache_tokens, 0));
  }
  // Plain `:` pings while the prompt is processed are llama-server's
  // (--sse-ping-interval); Ollama writes nothing before its first chunk.
  const bool pings = cfg_.knobs.prefill_ping_ms > 0 && job.stream && cfg_.flavour == Flavour::LlamaCpp;
  if (pings) {
    send_head(job);  // llama-server sends the headers when the slot starts
    job.keepalive->arm(cfg_.knobs.prefill_ping_ms);
  }
  job.prefill_step_ms = prefill_ms / job.prefill_steps;
  job.step->arm(job.prefill_step_ms);
  update_load_stats();
}

void Responder::prefill_tick(uint64_t id) {
  Job* j = find(id);
  if (!j) return;
  ++j->prefill_step;
  const int total = static_cast<int>(j->prompt_ids.size());
  const int done = std::min(total, j->cache_tokens + j->prefill_step * kMlxLmPrefillStepTokens);
  if (cfg_.flavour == Flavour::MlxLm && j->stream) send_raw_event(*j, keepalive_comment(cfg_.flavour, done, total));
  if (j->stream && j->return_progress)
    send_event(*j,
               chunk_prompt_progress(j->ids, total, j->cache_tokens, done, (clock_.mono_ns() - j->t_slot) / 1'000'000));
  if (j->prefill_step < j->prefill_steps) {
    j->step->arm(j->prefill_step_ms);
    return;
  }
  prefill_done(*j);
}

void Responder::prefill_done(Job& job) {
  if (cfg_.knobs.prefill_ping_ms > 0 && cfg_.flavour != Flavour::Omlx)
    job.keepalive->disarm();  // pings end with the prefill
  job.t_first = clock_.mono_ns();
  double prompt_ms = static_cast<double>(job.t_first - job.t_slot) / 1e6;
  metrics_.prompt_tokens_total += job.eval_tokens;
  metrics_.prompt_seconds_total += prompt_ms / 1e3;
  metrics_.n_decode_total += 1;
  metrics_.busy_slot_decodes += stats_.processing;
  metrics_.n_tokens_max = std::max<uint64_t>(metrics_.n_tokens_max, job.eval_tokens);

  switch (cfg_.scenario) {
    case Scenario::OkNoBody: {
      auto conn = job.conn;
      int slot = job.slot;
      if (job.head_sent) {
        conn->abort();  // the stream is already open: cut it
      } else {
        conn->head_then_close(
            200, response_headers(cfg_.flavour, job.stream ? BodyKind::EventStream : BodyKind::Json, Persist::Close));
      }
      release_slot(slot, false);
      retire(job.id);
      schedule();
      publish();
      return;
    }
    case Scenario::KeepalivesOnly:
      if (job.stream) send_head(job);
      hold(job);
      return;
    default: break;
  }
  job.phase = Phase::Decoding;
  if (job.stream) {
    send_head(job);
    if (auto role = chunk_role(cfg_.flavour, job.ids)) send_event(job, *role);
  }
  emit_next(job.id);
}

void Responder::emit_next(uint64_t id) {
  Job* j = find(id);
  if (!j) return;
  if (j->next_piece >= j->plan.pieces.size()) return finish(*j);
  if (cfg_.scenario == Scenario::StallMidStream &&
      j->next_piece >= static_cast<size_t>(std::max(cfg_.knobs.stall_after_tokens, 0)))
    return hold(*j);
  const Piece& piece = j->plan.pieces[j->next_piece];
  if (j->stream) {
    const ToolCallOut* opening = nullptr;
    if (piece.kind == PieceKind::ToolArgs && !j->tool_opened) {
      opening = &j->tool;
      j->tool_opened = true;
    }
    send_event(*j, chunk_piece(cfg_.flavour, j->ids, piece, opening));
  }
  ++j->next_piece;
  SlotView& v = slots_[j->slot]->view;
  v.n_decoded = static_cast<int>(j->next_piece);
  v.n_remain = j->max_tokens > 0 ? j->max_tokens - v.n_decoded : -1;
  metrics_.n_decode_total += 1;
  metrics_.busy_slot_decodes += stats_.processing;
  if (j->next_piece >= j->plan.pieces.size()) return finish(*j);
  j->step->arm(drift::scaled_ms(cfg_.knobs, j->prompt_ids.size(), token_interval_ms()));
}

void Responder::finish(Job& job) {
  int64_t now = clock_.mono_ns();
  GenTimings t;
  t.cache_n = job.cache_tokens;
  t.prompt_n = job.eval_tokens;
  t.prompt_ms = static_cast<double>(job.t_first - job.t_slot) / 1e6;
  t.predicted_n = static_cast<int>(job.plan.pieces.size());
  t.predicted_ms = static_cast<double>(now - job.t_first) / 1e6;
  if (cfg_.scenario == Scenario::DraftSlowdown) {
    t.draft_n = t.predicted_n;
    t.draft_n_accepted = static_cast<int>(std::lround(kDraftAcceptance * t.predicted_n));
  }
  t.ttft_s = static_cast<double>(job.t_first - job.t_arrival) / 1e9;
  t.total_s = static_cast<double>(now - job.t_arrival) / 1e9;
  t.load_s = static_cast<double>(job.load_ms) / 1e3;
  metrics_.tokens_predicted_total += t.predicted_n;
  metrics_.tokens_predicted_seconds_total += t.predicted_ms / 1e3;
  metrics_.draft_tokens_total += t.draft_n;
  metrics_.accepted_tokens_total += t.draft_n_accepted;
  metrics_.drafts_total += (t.draft_n + kDraftTokensPerStep - 1) / kDraftTokensPerStep;

  if (job.stream) {
    bool llama_usage = cfg_.flavour == Flavour::LlamaCpp && !job.include_usage;
    send_event(job, chunk_finish(cfg_.flavour, job.ids, job.plan.finish_reason, llama_usage ? &t : nullptr));
    if (job.include_usage) send_event(job, chunk_usage(cfg_.flavour, job.ids, t));
    if (cfg_.scenario != Scenario::NoDone) send_raw_event(job, "data: [DONE]\n\n");
    job.conn->end_chunked();
  } else {
    CompletionOut out;
    out.finish_reason = job.plan.finish_reason;
    for (const auto& p : job.plan.pieces) {
      if (p.kind == PieceKind::Reasoning) out.reasoning += p.text;
      if (p.kind == PieceKind::Content) out.content += p.text;
    }
    if (job.plan.tool_call) {
      ToolCallOut tool = job.tool;
      for (const auto& p : job.plan.pieces)
        if (p.kind == PieceKind::ToolArgs) tool.arguments += p.text;
      out.tool = tool;
    }
    if (job.top_logprobs > 0) {
      const AnswerMode answers = parse_answer_mode(cfg_.knobs.answers).value_or(AnswerMode::Steady);
      out.logprobs = answer_logprobs(answers, job.prompt, job.plan.pieces, job.top_logprobs);
    }
    ojson answer = completion_body(cfg_.flavour, job.ids, out, t);
    if (job.lmstudio_v0) lmstudio_v0_extras(answer, server_view(), t);
    job.conn->respond(200, response_headers(cfg_.flavour, BodyKind::Json, job.persist), answer.dump(), job.persist);
  }
  ++stats_.completed;
  release_slot(job.slot, false);
  retire(job.id);
  schedule();
  publish();
}

void Responder::hold(Job& job) {
  job.phase = Phase::Held;
  job.step->disarm();
  if (job.stream && cfg_.scenario == Scenario::KeepalivesOnly) keepalive_tick(job.id);
  publish();
}

void Responder::keepalive_tick(uint64_t id) {
  Job* j = find(id);
  if (!j || !j->stream || !j->head_sent) return;
  if (j->phase == Phase::Prefill && cfg_.flavour != Flavour::Omlx) {
    send_raw_event(*j, ":\n\n");  // llama-server's SSE ping: an empty comment, no progress
    j->keepalive->arm(cfg_.knobs.prefill_ping_ms);
    return;
  }
  if (cfg_.flavour == Flavour::Omlx) {
    send_event(*j, omlx_keepalive_chunk(j->ids.id));  // re-arms itself
    return;
  }
  int total = static_cast<int>(j->prompt_ids.size());
  send_raw_event(*j, keepalive_comment(cfg_.flavour, total, total));
  arm_keepalive(*j);
}

void Responder::on_gone(uint64_t id) {
  Job* j = find(id);
  if (!j) return;
  ++stats_.cancels_seen;
  if (j->slot >= 0) release_slot(j->slot, cfg_.scenario == Scenario::StuckSlotAfterCancel);
  retire(id);
  schedule();
  publish();
}

void Responder::release_slot(int slot, bool stuck) {
  Slot& s = *slots_[slot];
  if (cfg_.scenario == Scenario::StopServing) return;  // nothing frees a slot any more
  if (stuck) {
    // The slot keeps reporting is_processing and blocks the queue until the alarm.
    s.stuck->arm(cfg_.knobs.stuck_slot_ms);
  } else {
    s.busy = false;
    s.view.is_processing = false;
  }
  update_load_stats();
}

void Responder::retire(uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second->step->disarm();
  it->second->keepalive->disarm();
  graveyard_.push_back(std::move(it->second));
  jobs_.erase(it);
  reaper_->arm(0);
}

// ------------------------------------------------------------------ output

void Responder::send_head(Job& job) {
  if (job.head_sent) return;
  job.head_sent = true;
  job.conn->start_chunked(200, response_headers(cfg_.flavour, BodyKind::EventStream, job.persist), job.persist);
}

void Responder::send_event(Job& job, const ojson& event) { send_raw_event(job, "data: " + event.dump() + "\n\n"); }

void Responder::send_raw_event(Job& job, const std::string& text) {
  job.conn->write_chunk(text);
  if (cfg_.flavour == Flavour::Omlx) arm_keepalive(job);
}

void Responder::arm_keepalive(Job& job) { job.keepalive->arm(cfg_.knobs.keepalive_interval_ms); }

}  // namespace soak::fake
