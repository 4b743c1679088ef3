// The agent session (docs/DESIGN.md §2.13): the seeds' orchestrator loop as a
// deterministic, public workload. A session is the shared ~7 KB system prompt,
// then turn after turn: a 150-200-token user turn, the runtime's own answer
// kept as history (its reasoning stripped unless the session keeps it), and
// after every tool call a tool result fed back, so the context grows turn by
// turn until the next turn would pass the ceiling; then a new session starts.
//
// Every n-th turn requires a tool call (tool_choice "required" where the
// runtime has it): an answer without one is missing_tool_call. A malformed
// call is answered with a tool error, as an agent would, and the next turn
// requires the call again: a recovery turn. Sessions alternate thinking on
// and off in the configured proportion; a thinking session keeps its
// reasoning in the history only when the settings say preserve_thinking.
//
// Pure: no I/O, no clock, no randomness besides the seeded fixtures; the probe
// step (probe_session.cc) sends what next_turn() builds and hands the answer to
// record(). The simulated runner of the campaign tests drives the same class.
// Thread-agnostic; owned by whoever holds the candidate's state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/types.h"

namespace soak::probes {

inline constexpr int kSessionMaxFailedTurns = 3;  // answerless turns in a row before an agent gives up
inline constexpr int64_t kSessionUserTurnMinTokens = 150;
inline constexpr int64_t kSessionUserTurnMaxTokens = 200;
inline constexpr int64_t kSessionToolResultWords = 300;
inline constexpr double kSessionCharsPerToken = 4.0;  // the estimate before the runtime counted
// What a turn adds besides its user turn and tool result (answer, template
// tokens), for the ceiling check before the runtime has counted.
inline constexpr int64_t kSessionTurnOverheadTokens = 64;

// One tool call as the runtime sent it.
struct SessionToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// The turn to send.
struct SessionTurn {
  int64_t session = 0;           // sessions started by this object, from 0
  int64_t turn = 1;              // 1 = the session's first turn
  bool thinking = false;         // enable_thinking sent on
  bool tool_required = false;    // tool_choice required, the user turn asks for the tool
  bool recovery = false;         // the previous turn's tool call was malformed and the runtime was told
  int64_t context_estimate = 0;  // tokens carried, estimated from the characters sent
  // What this turn adds to the history (the user turn; nothing on a recovery
  // turn, whose last message is already the tool error).
  std::optional<nlohmann::ordered_json> user_message;
};

// What came back.
struct SessionAnswer {
  Outcome outcome = Outcome::HarnessError;
  std::string content;
  std::string reasoning;
  std::vector<SessionToolCall> tool_calls;
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> completion_tokens;
};

// The context a turn carried, as rows record it (extra_json and locators).
struct TurnFacts {
  int64_t context_tokens = 0;  // usage.prompt_tokens, else the estimate
  int64_t band_lo = 0;         // band lower bound (context_tokens rounded down to the band width)
  std::string band;            // "30K-40K"
};

class AgentSession {
 public:
  // `ceiling_tokens`: the settings' ceiling already bounded by the runtime's context.
  AgentSession(uint64_t seed, const AgentSettings& settings, int64_t ceiling_tokens);

  // The next turn; starts a new session (with `new_nonce` in its system
  // prompt, so no cache serves a new session's first turn) when none is open.
  SessionTurn next_turn(std::string_view new_nonce);
  // The whole conversation to send for `turn` (the last one next_turn() built).
  nlohmann::ordered_json messages(const SessionTurn& turn) const;
  bool session_open() const { return open_; }
  // Records the answer to the turn last built; returns the facts for its row.
  TurnFacts record(const SessionTurn& sent, const SessionAnswer& answer);
  TurnFacts facts(int64_t context_tokens) const;

  int64_t sessions_started() const { return session_; }
  int64_t context_tokens() const { return context_tokens_; }

 private:
  bool thinking_for(int64_t session) const;
  void end_session() { open_ = false; }
  int64_t estimate_next_turn() const;
  void append(nlohmann::ordered_json m);

  uint64_t seed_;
  AgentSettings settings_;
  int64_t ceiling_;
  bool open_ = false;
  int64_t session_ = 0;  // sessions started
  int64_t turn_ = 0;     // turns built in the open session
  bool thinking_ = false;
  bool recovery_due_ = false;
  int failed_in_a_row_ = 0;
  int64_t context_tokens_ = 0;      // what the last answered turn carried, plus its answer
  nlohmann::ordered_json history_;  // system prompt and everything answered since
  int64_t history_chars_ = 0;       // serialized size of history_, kept as it grows
};

// Labels an agent row with what its turn carried: size_tokens the band's lower
// bound, workload "agent/<band>/<cache>/<thinking|no_thinking>", and
// extra_json {session, turn, context_tokens, band, tool_required, recovery,
// thinking} (what the judge's session rules read).
void label_turn_row(ProbeResult& r, const SessionTurn& turn, const TurnFacts& f);

// The session's tool (the tool probe's: a required nested object argument).
nlohmann::ordered_json session_tools();
// "30K-40K" for band 30000 of width 10000; "0-10K" for the first band.
std::string band_label(int64_t band_lo, int64_t width);
// The deterministic user turn `turn` of session `session` (150-200 tokens).
std::string session_user_turn(uint64_t seed, int64_t session, int64_t turn, bool tool_required);
// The deterministic tool result for a call in turn `turn`.
std::string session_tool_result(uint64_t seed, int64_t session, int64_t turn);

}  // namespace soak::probes
