#include "probes/openai_chat.h"

#include <algorithm>
#include <cmath>

#include "probes/json_fields.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;

// oMLX (some releases) interleaves chunks whose model is this literal and whose
// content is empty, immediately and every 10 s, to keep idle clients connected.
constexpr std::string_view kOmlxKeepaliveModel = "keepalive";

ServerTimings parse_timings(const json& t) {
  using T = ServerTimings;
  ServerTimings s;
  jsonf::read_fields<T>(t, s,
                        {{"prompt_n", &T::prompt_n},
                         {"cache_n", &T::cache_n},
                         {"predicted_n", &T::predicted_n},
                         {"draft_n", &T::draft_n},
                         {"draft_n_accepted", &T::draft_n_accepted}},
                        {{"prompt_ms", &T::prompt_ms},
                         {"prompt_per_second", &T::prompt_per_second},
                         {"predicted_ms", &T::predicted_ms},
                         {"predicted_per_second", &T::predicted_per_second}});
  return s;
}

Usage parse_usage(const json& u) {
  using U = Usage;
  Usage x;
  jsonf::read_fields<U>(u, x,
                        {{"prompt_tokens", &U::prompt_tokens},
                         {"completion_tokens", &U::completion_tokens},
                         {"total_tokens", &U::total_tokens}},
                        {{"time_to_first_token", &U::server_ttft_s},
                         {"prompt_tokens_per_second", &U::server_prompt_tps},
                         {"generation_tokens_per_second", &U::server_generation_tps},
                         {"model_load_duration", &U::server_load_s}});
  if (const json* d = jsonf::member(u, "completion_tokens_details"))
    x.reasoning_tokens = jsonf::get_int(*d, "reasoning_tokens");
  if (const json* d = jsonf::member(u, "prompt_tokens_details")) x.cached_tokens = jsonf::get_int(*d, "cached_tokens");
  if (!x.cached_tokens) x.cached_tokens = jsonf::get_int(u, "cached_tokens");
  return x;
}

ApiError error_from_json(const json& e) {
  ApiError err;
  if (e.is_string()) {
    err.message = e.get_ref<const std::string&>();
    return err;
  }
  if (!e.is_object()) {
    err.message = text::excerpt(jsonf::dump(e), 200);
    return err;
  }
  if (auto c = jsonf::get_int(e, "code")) err.code = static_cast<int>(*c);
  err.type = jsonf::get_string(e, "type").value_or("");
  err.message = jsonf::get_string(e, "message").value_or("");
  err.n_prompt_tokens = jsonf::get_int(e, "n_prompt_tokens");
  err.n_ctx = jsonf::get_int(e, "n_ctx");
  if (err.message.empty() && err.type.empty()) err.message = text::excerpt(jsonf::dump(e), 200);
  return err;
}

// Reasoning lives in `reasoning_content` (llama.cpp, oMLX, Rapid-MLX, vLLM
// legacy) or `reasoning` (mlx-lm server.py, vLLM current); some servers send
// both with the same text, so the first non-empty one wins.
std::string reasoning_of(const json& delta) {
  for (const char* key : {"reasoning_content", "reasoning"}) {
    auto s = jsonf::get_string(delta, key);
    if (s && !s->empty()) return *s;
  }
  return {};
}

ToolCall& tool_slot(std::vector<ToolCall>& calls, int index) {
  for (auto& c : calls)
    if (c.index == index) return c;
  auto it = std::lower_bound(calls.begin(), calls.end(), index, [](const ToolCall& c, int i) { return c.index < i; });
  ToolCall fresh;
  fresh.index = index;
  return *calls.insert(it, std::move(fresh));
}

// Merges one tool_calls element (a stream fragment or a whole call). Returns
// whether it carried any tool-call text.
bool merge_tool_call(std::vector<ToolCall>& calls, const json& tc, int fallback_index) {
  if (!tc.is_object()) return false;
  int index = static_cast<int>(jsonf::get_int(tc, "index").value_or(fallback_index));
  ToolCall& slot = tool_slot(calls, index);
  bool text = false;
  if (auto id = jsonf::get_string(tc, "id"); id && !id->empty() && slot.id.empty()) slot.id = *id;
  if (auto ty = jsonf::get_string(tc, "type"); ty && !ty->empty() && slot.type.empty()) slot.type = *ty;
  if (const json* fn = jsonf::member(tc, "function")) {
    // The name normally arrives once; a runtime that repeats it must not double it.
    if (auto name = jsonf::get_string(*fn, "name"); name && !name->empty() && *name != slot.name) {
      slot.name += *name;
      text = true;
    }
    if (const json* args = jsonf::member(*fn, "arguments")) {
      if (args->is_string()) {
        const auto& a = args->get_ref<const std::string&>();
        if (!a.empty()) {
          slot.arguments += a;
          text = true;
        }
      } else if (args->is_object()) {
        // A few servers send parsed arguments; keep the JSON text.
        slot.arguments += jsonf::dump(*args);
        text = true;
      }
    }
  }
  return text;
}

struct DeltaOutput {
  bool content = false;
  bool reasoning = false;
  bool tool = false;
  bool any() const { return content || reasoning || tool; }
};

// Applies one choice's delta (stream) or message (non-stream) to the result.
DeltaOutput apply_message(ChatResult& r, const json& msg) {
  DeltaOutput out;
  if (!msg.is_object()) return out;
  if (auto c = jsonf::get_string(msg, "content"); c && !c->empty()) {
    r.content += *c;
    out.content = true;
  }
  std::string reasoning = reasoning_of(msg);
  if (!reasoning.empty()) {
    r.reasoning += reasoning;
    out.reasoning = true;
  }
  if (const json* tcs = jsonf::member(msg, "tool_calls"); tcs && tcs->is_array()) {
    int pos = 0;
    for (const auto& tc : *tcs) out.tool = merge_tool_call(r.tool_calls, tc, pos++) || out.tool;
  }
  return out;
}

void apply_top_level(ChatResult& r, const json& j, std::vector<std::string>& notes) {
  if (auto model = jsonf::get_string(j, "model"); model && !model->empty()) {
    if (r.model.empty()) {
      r.model = *model;
    } else if (*model != r.model) {
      notes.push_back("response model changed from '" + text::excerpt(r.model, 60) + "' to '" +
                      text::excerpt(*model, 60) + "'");
    }
  }
  if (auto fp = jsonf::get_string(j, "system_fingerprint"); fp && r.system_fingerprint.empty())
    r.system_fingerprint = *fp;
  if (const json* u = jsonf::member(j, "usage"); u && u->is_object()) r.usage = parse_usage(*u);
  if (const json* t = jsonf::member(j, "timings"); t && t->is_object()) r.timings = parse_timings(*t);
  // LM Studio's /api/v0 answers carry server figures in `stats` (seconds, tok/s).
  if (const json* st = jsonf::member(j, "stats"); st && st->is_object()) {
    if (!r.usage) r.usage = Usage{};
    if (auto v = jsonf::get_number(*st, "time_to_first_token")) r.usage->server_ttft_s = v;
    if (auto v = jsonf::get_number(*st, "tokens_per_second")) r.usage->server_generation_tps = v;
    if (auto v = jsonf::get_number(*st, "generation_time")) r.usage->server_generation_s = v;
  }
  if (const json* e = jsonf::member(j, "error"); e && !e->is_null()) r.error = error_from_json(*e);
}

void record_output(ChatResult& r, const DeltaOutput& out, int64_t t) {
  if (!out.any()) return;
  r.token_arrivals_ns.push_back(t);
  if (!r.first_token_ns) r.first_token_ns = t;
  r.last_token_ns = t;
  if (out.content && !r.first_content_ns) r.first_content_ns = t;
  if (out.content || out.tool) ++r.content_events;
  if (out.reasoning) ++r.reasoning_events;
}

void add_problem(ChatResult& r, std::string what) {
  if (r.problems.size() < kMaxRecordedProblems) {
    r.problems.push_back(std::move(what));
  } else {
    ++r.problems_dropped;
  }
}

}  // namespace

// ---------------------------------------------------------------- streaming

void ChatStreamAccumulator::note_problem(std::string what) { add_problem(r_, std::move(what)); }

void ChatStreamAccumulator::on_event(std::string_view data, int64_t arrival_ns) {
  ++r_.data_events;
  std::string_view d = text::trim(data);
  if (r_.saw_done) {
    note_problem("data event after [DONE]: " + text::excerpt(d, 60));
    return;
  }
  if (d == "[DONE]") {
    r_.saw_done = true;
    r_.terminal_ns = arrival_ns;
    if (!r_.first_event_ns) r_.first_event_ns = arrival_ns;
    return;
  }
  json j = jsonf::parse(d);
  if (j.is_discarded() || !j.is_object()) {
    ++r_.malformed_events;
    if (!r_.first_event_ns) r_.first_event_ns = arrival_ns;
    note_problem(std::string(j.is_discarded() ? "malformed JSON event: " : "event is not a JSON object: ") +
                 text::excerpt(d, 80));
    return;
  }
  if (jsonf::get_string(j, "model").value_or("") == kOmlxKeepaliveModel) {
    ++r_.keepalive_events;
    return;
  }
  if (auto report = parse_prompt_progress(j)) {
    r_.prefill.note(*report);
    if (carries_only_progress(j)) {
      ++r_.progress_events;
      return;
    }
  }
  if (!r_.first_event_ns) r_.first_event_ns = arrival_ns;

  std::vector<std::string> notes;
  apply_top_level(r_, j, notes);
  for (auto& n : notes) note_problem(std::move(n));

  DeltaOutput out;
  if (const json* choices = jsonf::member(j, "choices"); choices && choices->is_array()) {
    for (const auto& ch : *choices) {
      if (!ch.is_object()) continue;
      if (jsonf::get_int(ch, "index").value_or(0) != 0) {
        note_problem("choice with index != 0 ignored");
        continue;
      }
      if (auto fr = jsonf::get_string(ch, "finish_reason"); fr && !fr->empty()) r_.finish_reason = *fr;
      if (const json* delta = jsonf::member(ch, "delta")) {
        DeltaOutput o = apply_message(r_, *delta);
        out.content |= o.content;
        out.reasoning |= o.reasoning;
        out.tool |= o.tool;
      }
    }
  }
  record_output(r_, out, arrival_ns);
}

void ChatStreamAccumulator::on_comment(std::string_view text) {
  if (auto report = parse_keepalive_comment(text)) r_.prefill.note(*report);
}

// ---------------------------------------------------------------- non-stream

ChatResult parse_chat_completion(std::string_view body, int64_t arrival_ns) {
  ChatResult r;
  r.mode = ResponseMode::NonStream;
  std::string_view b = text::trim(body);
  if (b.empty()) return r;
  r.data_events = 1;
  json j = jsonf::parse(b);
  if (j.is_discarded() || !j.is_object()) {
    r.malformed_events = 1;
    add_problem(
        r, std::string(j.is_discarded() ? "body is not JSON: " : "body is not a JSON object: ") + text::excerpt(b, 80));
    return r;
  }
  r.first_event_ns = arrival_ns;
  r.terminal_ns = arrival_ns;
  std::vector<std::string> notes;
  apply_top_level(r, j, notes);
  for (auto& n : notes) add_problem(r, std::move(n));
  DeltaOutput out;
  if (const json* choices = jsonf::member(j, "choices"); choices && choices->is_array() && !choices->empty()) {
    const json& ch = (*choices)[0];
    if (auto fr = jsonf::get_string(ch, "finish_reason"); fr && !fr->empty()) r.finish_reason = *fr;
    if (const json* msg = jsonf::member(ch, "message")) out = apply_message(r, *msg);
    if (choices->size() > 1) add_problem(r, "choices beyond index 0 ignored");
  }
  // One body is one event: there is no per-token timing to record.
  if (out.content || out.tool) r.content_events = 1;
  if (out.reasoning) r.reasoning_events = 1;
  return r;
}

ApiError parse_api_error(std::string_view body) {
  std::string_view b = text::trim(body);
  json j = jsonf::parse(b);
  if (j.is_discarded() || !j.is_object()) {
    ApiError e;
    e.message = text::excerpt(b, 200);
    return e;
  }
  if (const json* e = jsonf::member(j, "error"); e && !e->is_null()) return error_from_json(*e);
  ApiError e;
  if (const json* d = jsonf::member(j, "detail")) {
    if (d->is_string()) {
      e.message = d->get_ref<const std::string&>();
    } else if (d->is_array()) {  // FastAPI validation errors: [{"loc":..,"msg":..}]
      for (const auto& item : *d) {
        if (!e.message.empty()) e.message += "; ";
        e.message += jsonf::get_string(item, "msg").value_or(text::excerpt(jsonf::dump(item), 80));
      }
    }
  }
  if (e.message.empty()) e.message = jsonf::get_string(j, "message").value_or(text::excerpt(b, 200));
  return e;
}

// ---------------------------------------------------------------- row fields

ItlStats itl_stats(const std::vector<int64_t>& arrivals_ns) {
  ItlStats s;
  if (arrivals_ns.size() < 2) return s;
  std::vector<int64_t> gaps;
  gaps.reserve(arrivals_ns.size() - 1);
  for (size_t i = 1; i < arrivals_ns.size(); ++i) gaps.push_back(arrivals_ns[i] - arrivals_ns[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  auto rank = [&](double q) {
    size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(gaps.size())));
    return gaps[k == 0 ? 0 : k - 1] / 1000;
  };
  s.p50_us = rank(0.50);
  s.p95_us = rank(0.95);
  s.max_us = gaps.back() / 1000;
  return s;
}

DecodeRate client_decode_rate(int64_t tokens, const std::vector<int64_t>& arrivals_ns) {
  DecodeRate d;
  if (tokens < 2 || arrivals_ns.empty()) return d;
  const bool enough = tokens >= kTimingArtifactMinTokens;
  const int64_t span_ns = arrivals_ns.back() - arrivals_ns.front();
  if (arrivals_ns.size() < 2 || span_ns <= 0) {
    d.timing_artifact = enough;
    return d;
  }
  d.tokens_per_s = static_cast<double>(tokens - 1) / (static_cast<double>(span_ns) / 1e9);
  d.timing_artifact = enough && *d.tokens_per_s > kTimingArtifactMaxDecodeTps;
  return d;
}

void fill_probe_result(const ChatResult& r, const RequestClock& clock, ProbeResult& out) {
  auto rel = [&](std::optional<int64_t> ns) -> std::optional<int64_t> {
    if (!ns) return std::nullopt;
    return (*ns - clock.start_ns) / 1000;
  };
  out.t_connect_us = clock.connect_us;
  out.t_first_byte_us = rel(clock.first_byte_ns);
  out.t_first_event_us = rel(r.first_event_ns);
  out.t_first_token_us = rel(r.first_token_ns);
  out.t_last_token_us = rel(r.last_token_ns);
  out.t_terminal_us = rel(r.terminal_ns);
  out.t_done_us = rel(clock.done_ns);

  ItlStats itl = itl_stats(r.token_arrivals_ns);
  out.itl_p50_us = itl.p50_us;
  out.itl_p95_us = itl.p95_us;
  out.itl_max_us = itl.max_us;

  if (r.usage) {
    out.prompt_tokens = r.usage->prompt_tokens;
    out.completion_tokens = r.usage->completion_tokens;
    out.reasoning_tokens = r.usage->reasoning_tokens;
  }
  out.content_events = r.content_events;
  out.reasoning_events = r.reasoning_events;

  if (r.mode == ResponseMode::Stream) {
    int64_t tokens = (r.usage && r.usage->completion_tokens) ? *r.usage->completion_tokens
                                                             : static_cast<int64_t>(r.token_arrivals_ns.size());
    DecodeRate rate = client_decode_rate(tokens, r.token_arrivals_ns);
    out.client_decode_tps = rate.tokens_per_s;
    out.timing_artifact = rate.timing_artifact;
  }

  if (r.timings) {
    const ServerTimings& t = *r.timings;
    out.server_prompt_n = t.prompt_n;
    out.server_cache_n = t.cache_n;
    out.server_predicted_n = t.predicted_n;
    out.server_prompt_ms = t.prompt_ms;
    out.server_prompt_tps = t.prompt_per_second;
    out.server_predicted_ms = t.predicted_ms;
    out.server_predicted_tps = t.predicted_per_second;
    out.server_draft_n = t.draft_n;
    out.server_draft_accepted = t.draft_n_accepted;
  }
  if (r.usage) {
    const Usage& u = *r.usage;
    if (u.server_ttft_s) out.server_ttft_ms = *u.server_ttft_s * 1000.0;
    if (u.server_load_s && *u.server_load_s > 0) out.server_load_ms = *u.server_load_s * 1000.0;
    // Without llama.cpp timings, usage says how much of the prompt came from
    // the cache: cached and processed tokens go to their own columns.
    if (!r.timings && u.cached_tokens && u.prompt_tokens && *u.cached_tokens <= *u.prompt_tokens) {
      out.server_cache_n = *u.cached_tokens;
      out.server_prompt_n = *u.prompt_tokens - *u.cached_tokens;
    }
    if (!out.server_prompt_tps && u.server_prompt_tps) {
      // oMLX prompt_tokens_per_second = prompt_tokens / ttft with cached tokens
      // counted; prefill rates compare processed tokens only (llama.cpp's
      // prompt_per_second), so a repeat's cached share is taken out.
      if (u.cached_tokens && *u.cached_tokens > 0 && u.prompt_tokens && u.server_ttft_s && *u.server_ttft_s > 0) {
        out.server_prompt_tps = static_cast<double>(*u.prompt_tokens - *u.cached_tokens) / *u.server_ttft_s;
      } else {
        out.server_prompt_tps = u.server_prompt_tps;
      }
    }
    if (!out.server_predicted_tps) out.server_predicted_tps = u.server_generation_tps;
    if (!out.server_predicted_ms && u.server_generation_s) out.server_predicted_ms = *u.server_generation_s * 1000.0;
  }
  out.finish_reason = r.finish_reason;
  out.response_model = r.model;
}

}  // namespace soak::probes
