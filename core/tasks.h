// The tasks a stage schedules, as a closed vocabulary, and the probe kinds
// each runs: the one list of each, shared by the plans that schedule them
// (schedules/plan.h), the runner that runs them, the judges that require a
// task's rows (the smoke list) and `soakd probe`.
//
// Thread-agnostic, no I/O.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace soak {

// What each task runs is probe_kinds_for(), below.
enum class TaskKind {
  Smoke,        // the smoke pass, once per smoke (also what smoke must see clean)
  Scrape,       // health + server metrics/slots/props; the stage's heartbeat for coverage
  Functional,   // the content checks, thinking on/off, repetition
  LongContext,  // fresh + exact repeat at each configured size (heavy)
  Burst,        // N requests released together, for each configured N (heavy)
  Capacity,     // N long prompts of one size released together, per capacity entry (heavy)
  Cancel,       // abort mid-stream, then prove the slot was freed
  Agent,        // gate: one agent-like turn (shared system prompt, tool call), continuously
  SoakTraffic,  // soak: one lower-rate agent-like turn
  PrefixReuse,  // canary: cold, warm, then prefix turns 1-3 on the shared system prompt
  Warmup,       // a managed or first candidate's canary opens with it: pages the model in; never compared
  GoldenStart,  // the golden set once, at the canary's start (after any warm-up), alone on the runtime
  GoldenEnd,    // the golden set once, at the canary's and the soak's end, alone on the runtime
};
std::string_view to_string(TaskKind k);
std::optional<TaskKind> parse_task_kind(std::string_view s);

// The probe kinds a task runs, in order; the one list of each (the runner
// runs them, the smoke judge requires the smoke list, `soakd probe` runs smoke
// and functional by default).
//   smoke         health, identity, marker, stream, strict_json, tool_call
//   scrape        health, scrape (the heartbeat)
//   functional    marker, stream, strict_json, tool_call, thinking, repetition
//   long_context  long_context (fresh + exact repeat per configured size)
//   burst         burst (each configured N, members and a summary row)
//   capacity      capacity (each size x concurrency entry, members and a summary row)
//   cancel        cancel
//   agent, soak_traffic   agent (one turn of the candidate's agent session)
//   prefix_reuse  shared_prefix
//   warmup        marker, stream (short completions: the weights paged in before anything is timed)
//   golden_start, golden_end   equivalence (the golden set's greedy answers, docs/DESIGN.md §3.13)
// A pooling candidate (WorkloadKind embedding / rerank) is never sent a chat
// probe: its smoke is health + its pooling probe, functional, agent and soak
// traffic and warmup run the pooling probe, burst runs pooling bursts, scrape is as for
// chat, and long context, capacity, cancel, prefix reuse and the golden set run nothing.
std::vector<ProbeKind> probe_kinds_for(TaskKind task, WorkloadKind workload = WorkloadKind::Chat);
// The pooling probe of a pooling workload (Embeddings / Rerank); nullopt for chat.
std::optional<ProbeKind> pooling_probe(WorkloadKind workload);

}  // namespace soak
