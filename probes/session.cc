#include "probes/session.h"

#include <algorithm>
#include <cmath>

#include "probes/prompts.h"
#include "probes/requests.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

// Cities the tool turns ask about: public, fixed, and each a valid call.
constexpr std::pair<std::string_view, std::string_view> kPlaces[] = {
    {"Lima", "Peru"},    {"Oslo", "Norway"},     {"Porto", "Portugal"}, {"Quito", "Ecuador"},
    {"Cork", "Ireland"}, {"Perth", "Australia"}, {"Kyoto", "Japan"},    {"Tunis", "Tunisia"},
};

uint64_t turn_seed(uint64_t seed, int64_t session, int64_t turn) {
  uint64_t s = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(session + 1)) ^
               (0xa0761d6478bd642fULL * static_cast<uint64_t>(turn + 1));
  return splitmix64(s);
}

ojson text_message(std::string_view role, std::string_view content) {
  ojson m;
  m["role"] = std::string(role);
  m["content"] = std::string(content);
  return m;
}

int64_t tokens_of_chars(int64_t chars) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(chars) / kSessionCharsPerToken));
}

// A message's size as sent, near enough for an estimate: its text fields plus
// the keys and quotes around them (serializing every message again on every
// turn would cost more than the turn's own bookkeeping).
constexpr int64_t kMessageOverheadChars = 32;
int64_t chars_of(const ojson& m) {
  int64_t n = kMessageOverheadChars;
  for (const char* key : {"content", "reasoning_content", "tool_call_id"})
    if (auto it = m.find(key); it != m.end() && it->is_string())
      n += static_cast<int64_t>(it->get_ref<const std::string&>().size());
  if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array())
    for (const auto& c : *calls) {
      n += kMessageOverheadChars;
      const auto& fn = c["function"];
      for (const char* key : {"name", "arguments"})
        if (auto it = fn.find(key); it != fn.end() && it->is_string())
          n += static_cast<int64_t>(it->get_ref<const std::string&>().size());
    }
  return n;
}

// A malformed call gets what an agent framework answers: the error, and the
// request to call again with valid arguments.
std::string tool_error(const SessionAnswer& a) {
  return "Error: the call could not be run because its arguments do not match the tool's parameters (" +
         std::string(to_string(a.outcome)) +
         "). Call lookup_weather again with a location object holding city and country, and a unit.";
}

// An answer the runtime finished, whatever its content was worth: an agent
// keeps it in the history (a cut or looping answer too) and goes on.
bool answered(Outcome o) {
  switch (o) {
    case Outcome::Clean:
    case Outcome::InvalidToolCall:
    case Outcome::EmptyToolArgs:
    case Outcome::MissingToolCall:
    case Outcome::ServerTokenCap:
    case Outcome::Repetition:
    case Outcome::LeakedMarkup:
    case Outcome::InvalidJson:
    case Outcome::EmptyAnswer:
    case Outcome::MissingMarker: return true;
    default: return false;
  }
}

}  // namespace

ojson session_tools() { return tool_probe_tools(); }

std::string band_label(int64_t band_lo, int64_t width) {
  auto k = [](int64_t v) {
    if (v == 0) return std::string("0");
    if (v % 1000 == 0) return std::to_string(v / 1000) + "K";
    return std::to_string(v);
  };
  return k(band_lo) + "-" + k(band_lo + width);
}

std::string session_user_turn(uint64_t seed, int64_t session, int64_t turn, bool tool_required) {
  uint64_t s = turn_seed(seed, session, turn);
  const int64_t span = kSessionUserTurnMaxTokens - kSessionUserTurnMinTokens + 1;
  const int64_t target = kSessionUserTurnMinTokens + static_cast<int64_t>(splitmix64(s) % static_cast<uint64_t>(span));
  std::string ask;
  if (tool_required) {
    const auto& [city, country] = kPlaces[splitmix64(s) % std::size(kPlaces)];
    ask = "Before you answer, call lookup_weather for " + std::string(city) + ", " + std::string(country) +
          " in celsius; the site visit depends on it.";
  } else {
    ask = "Answer in two sentences, from the notes and what was said so far.";
  }
  // The request itself is about 30 tokens; filler brings the turn to its size.
  constexpr int64_t kAskTokens = 30;
  const auto filler_words = static_cast<int64_t>(
      std::llround(static_cast<double>(std::max<int64_t>(target - kAskTokens, 16)) / kTokensPerWordEstimate));
  return "Step " + std::to_string(turn) + ". Field notes: " + filler_text(splitmix64(s), filler_words) + "\n\n" + ask;
}

std::string session_tool_result(uint64_t seed, int64_t session, int64_t turn) {
  uint64_t s = turn_seed(seed ^ 0x746f6f6cULL, session, turn);  // "tool"
  return "{\"status\": \"ok\", \"station_log\": \"" + filler_text(splitmix64(s), kSessionToolResultWords) + "\"}";
}

AgentSession::AgentSession(uint64_t seed, const AgentSettings& settings, int64_t ceiling_tokens)
    : seed_(seed), settings_(settings), ceiling_(ceiling_tokens) {}

// Sessions are thinking in `thinking_share` of cases, spread evenly: session
// s is thinking when floor((s+1) * share) passes floor(s * share).
bool AgentSession::thinking_for(int64_t session) const {
  const double share = settings_.thinking_share;
  return std::floor(static_cast<double>(session + 1) * share) > std::floor(static_cast<double>(session) * share);
}

int64_t AgentSession::estimate_next_turn() const {
  return context_tokens_ + kSessionUserTurnMaxTokens + kSessionTurnOverheadTokens +
         static_cast<int64_t>(std::ceil(static_cast<double>(kSessionToolResultWords) * kTokensPerWordEstimate));
}

SessionTurn AgentSession::next_turn(std::string_view new_nonce) {
  if (!open_) {
    open_ = true;
    thinking_ = thinking_for(session_);
    ++session_;
    turn_ = 0;
    recovery_due_ = false;
    failed_in_a_row_ = 0;
    history_ = ojson::array();
    history_chars_ = 0;
    append(text_message("system", shared_system_prompt(seed_, new_nonce)));
    context_tokens_ = tokens_of_chars(history_chars_);
  }
  SessionTurn t;
  t.session = session_ - 1;
  t.turn = ++turn_;
  t.thinking = thinking_;
  t.recovery = recovery_due_;
  t.tool_required = recovery_due_ || (settings_.tool_every > 0 && t.turn % settings_.tool_every == 0);
  int64_t chars = history_chars_;
  if (!recovery_due_) {
    t.user_message = text_message("user", session_user_turn(seed_, t.session, t.turn, t.tool_required));
    chars += chars_of(*t.user_message);
  }
  t.context_estimate = tokens_of_chars(chars);
  return t;
}

ojson AgentSession::messages(const SessionTurn& turn) const {
  ojson m = history_;
  if (turn.user_message) m.push_back(*turn.user_message);
  return m;
}

void AgentSession::append(ojson m) {
  history_chars_ += chars_of(m);
  history_.push_back(std::move(m));
}

TurnFacts AgentSession::facts(int64_t context_tokens) const {
  TurnFacts f;
  f.context_tokens = context_tokens;
  const int64_t w = std::max<int64_t>(1, settings_.band_tokens);
  f.band_lo = context_tokens / w * w;
  f.band = band_label(f.band_lo, w);
  return f;
}

TurnFacts AgentSession::record(const SessionTurn& sent, const SessionAnswer& a) {
  const TurnFacts f = facts(a.prompt_tokens.value_or(sent.context_estimate));
  if (!answered(a.outcome)) {
    // No answer to keep (5xx, a cut stream, ...): an agent retries with the
    // same history, and gives up on the session after a few in a row.
    if (++failed_in_a_row_ >= kSessionMaxFailedTurns) end_session();
    return f;
  }
  failed_in_a_row_ = 0;
  const int64_t chars_sent = history_chars_ + (sent.user_message ? chars_of(*sent.user_message) : 0);
  if (sent.user_message) append(*sent.user_message);
  ojson m;
  m["role"] = "assistant";
  m["content"] = a.content.empty() && !a.tool_calls.empty() ? ojson(nullptr) : ojson(a.content);
  if (settings_.preserve_thinking && !a.reasoning.empty()) m["reasoning_content"] = a.reasoning;
  if (!a.tool_calls.empty()) {
    ojson calls = ojson::array();
    for (size_t i = 0; i < a.tool_calls.size(); ++i) {
      const SessionToolCall& c = a.tool_calls[i];
      ojson call;
      call["id"] = c.id.empty() ? "call_" + std::to_string(sent.turn) + "_" + std::to_string(i) : c.id;
      call["type"] = "function";
      call["function"]["name"] = c.name;
      call["function"]["arguments"] = c.arguments;
      calls.push_back(std::move(call));
    }
    m["tool_calls"] = calls;
  }
  append(m);
  const bool malformed = a.outcome == Outcome::InvalidToolCall || a.outcome == Outcome::EmptyToolArgs;
  if (!a.tool_calls.empty()) {
    const ojson& calls = history_.back()["tool_calls"];
    for (const auto& call : calls) {
      ojson r;
      r["role"] = "tool";
      r["tool_call_id"] = call["id"];
      r["content"] = malformed ? tool_error(a) : session_tool_result(seed_, sent.session, sent.turn);
      append(std::move(r));
    }
  }
  // A malformed call with no call to answer (e.g. text that named no tool)
  // still gets the error, as a user message.
  if (malformed && a.tool_calls.empty()) append(text_message("user", tool_error(a)));
  recovery_due_ = malformed;
  // What the runtime counted, plus the answer and tool results appended since
  // (estimated: the runtime counts them on the next turn).
  const int64_t added = tokens_of_chars(history_chars_ - chars_sent);
  context_tokens_ = a.prompt_tokens ? *a.prompt_tokens + added : tokens_of_chars(history_chars_);
  if (estimate_next_turn() > ceiling_) end_session();
  return f;
}

void label_turn_row(ProbeResult& r, const SessionTurn& turn, const TurnFacts& f) {
  r.size_tokens = f.band_lo;
  r.workload_id = workload_id(ProbeKind::Agent, f.band_lo, r.cache_state, turn.thinking ? "thinking" : "no_thinking");
  // Merged into what the row already carries (the answer's loop figure).
  auto j = nlohmann::ordered_json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::ordered_json::object();
  j["session"] = turn.session;
  j["turn"] = turn.turn;
  j["context_tokens"] = f.context_tokens;
  j["band"] = f.band;
  j["tool_required"] = turn.tool_required;
  j["recovery"] = turn.recovery;
  j["thinking"] = turn.thinking;
  r.extra_json = j.dump();
}

}  // namespace soak::probes
