// What a runtime says it is serving, read from its own endpoints (and, for
// MLX-LM, from its own argv): which model is loaded, how that is proven, and
// the launch fingerprint - context per slot and in total, slots, KV cache
// type, speculative decoding, the model file or digest, the max-tokens
// default (docs/DESIGN.md §7.2). A fingerprint change is treated like a build
// change: the campaign registers a new candidate row (campaigns/builds.cc).
//
// The generic part: the types, the comparison of two fingerprints, the model
// list and the identity judgement. Which routes a runtime answers and how
// each answer is read are its entry's (probes/runtimes/, Runtime::served).
//
// Pure: the probe engine does the I/O (probes/probe_build.cc for the build
// read, probes/probe_basic.cc for the identity probe). Nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/result.h"
#include "core/types.h"
#include "probes/openai_chat.h"
#include "probes/probe_types.h"

namespace soak::probes {

// How identity is proven for a runtime, strongest first. Only EchoOnly proves
// nothing: the answer repeats the request's model string.
enum class IdentityProof {
  ServedDigest,  // content digest of the loaded weights (Ollama /api/ps digest)
  ServedName,    // the runtime's own name for what it loaded (llama.cpp /props model_path, vLLM /v1/models)
  LoadedState,   // the runtime lists the model as loaded (LM Studio /api/v0/models state, Rapid-MLX build_info model,
                 // oMLX /api/status loaded_models)
  ProcessArgv,   // the runtime's own --model argument, and requests send exactly that id (MLX-LM)
  EchoOnly,  // answers echo the request; nothing says what is loaded (oMLX without loaded_models; MLX-LM without its
             // argv)
};
std::string_view to_string(IdentityProof p);

// What the runtime serves with. Absent fields were not exposed by it.
struct LaunchFingerprint {
  std::string model;  // model file path, weights digest or model key
  std::optional<int64_t> ctx_per_slot;
  std::optional<int64_t> ctx_total;
  std::optional<int64_t> slots;
  std::string kv_cache_type;                  // e.g. "bf16", "q8_0"; empty: not exposed
  std::optional<bool> speculative;            // draft model / speculative decoding on
  std::optional<int64_t> max_tokens_default;  // cap when a request sends none (-1: unlimited)
  // The runtime's own host-RAM prompt cache cap in MiB (llama-server
  // --cache-ram: 8192 unless given, -1 unlimited, 0 off): a soak footprint
  // may grow up to it and hold (docs/DESIGN.md §3.6).
  std::optional<int64_t> cache_ram_mib;
  std::string source;  // routes (or "argv") it was read from

  bool empty() const { return model.empty() && !ctx_per_slot && !slots && kv_cache_type.empty(); }
  // Notes a route (or "argv") as read: "/props + /slots".
  void add_source(std::string_view route);
  // Canonical JSON (fixed key order, absent fields left out, no `source`): the
  // value stored with the candidate row and compared for a change.
  std::string to_json() const;
  // One line for status, explain and `soakd probe`.
  std::string summary() const;
};
// The stored JSON back (empty text: an empty fingerprint).
Result<LaunchFingerprint> parse_fingerprint_json(std::string_view text);

// A fingerprint read now against the one stored with the candidate row. A
// launch changed when a field both know differs. A field only `now` knows is
// added (`merged`: the row's fingerprint from here on); a field only `was`
// knows stays as it was: a route that failed this time (/slots under load),
// an argv not readable, is not a new launch.
struct FingerprintComparison {
  bool changed = false;
  LaunchFingerprint merged;
};
FingerprintComparison compare_fingerprints(const LaunchFingerprint& was, const LaunchFingerprint& now);

struct ServedState {
  IdentityProof proof = IdentityProof::EchoOnly;
  std::vector<std::string> loaded;  // model ids the runtime says are loaded (or served)
  std::string served_digest;        // Ollama: digest of the entry that matched the config model
  LaunchFingerprint fingerprint;
  std::optional<int64_t> running, waiting;  // queue depth, where the route says
  // Echo only: why nothing better was available (e.g. MLX-LM whose argv could
  // not be read), shown in the row's detail. Empty: the runtime exposes nothing.
  std::string unproven_reason;

  // Adds a model id the runtime names as loaded (once; empty ids are not names).
  void add_loaded(const std::string& id);
};

// A managed candidate's launch argv as the runtime sees it (values taken from
// soakd's environment are left out: they are secrets, never a model path):
// the flags its launch environment sets (Runtime::argv_from_env, e.g.
// LLAMA_ARG_N_PREDICT as --n-predict) right after argv[0], then the argv's
// own, so that a flag given on both reads as the argv's, as upstream does.
std::vector<std::string> launch_argv_of(const CandidateConfig& c);
// The argv a candidate's runtime runs with: the launch argv when soakd
// launched it, else the discovered process's through `reader`; `error` says
// why it could not be read (no reader, process not found, argv not visible).
RuntimeArgv runtime_argv_of(const CandidateConfig& c, const RuntimeArgvReader& reader);

// Model ids from a model list answer: OpenAI `data[].id` (+ llama.cpp `aliases`),
// Ollama /api/tags `models[].name`, LM Studio /api/v0/models `data[].id`.
std::vector<std::string> parse_model_ids(std::string_view body);

// The identity probe's judgement of a model list: Clean when the canonical id is
// listed, IdentityMismatch otherwise (with what was listed).
Verdict check_model_list(const std::vector<std::string>& ids, std::string_view canonical_model);

// The identity judgement over a served state: Clean when the config model is
// the one loaded (with the proof named in the detail), IdentityMismatch when
// another is, IdentityUnproven for EchoOnly. `expected_model` (the
// fingerprint model of the candidate row being judged; empty: not known) must
// match what is served now, so re-pulled weights under the same tag fail.
Verdict judge_served(const ServedState& s, std::string_view config_model, std::string_view expected_model);

}  // namespace soak::probes
