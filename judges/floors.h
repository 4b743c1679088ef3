// Absolute rules that need no baseline (docs/DESIGN.md §3.11): the slo floors
// (decode rate, time to first token by prompt size, a short answer's wall, an
// agent turn's wall per context band, a warm retry's first token) and the
// launch's default output cap.
//
// What a recipe carries for them, and its JSON. Both are optional in a
// recipe: one stored before the rules existed has neither, and `soakctl
// explain` recomputes it without them.
//
// Metric rows (judges/floors.cc): "slo/decode_tps", "slo/ttft/<size>" ("short"
// for prompts that are not long-context sizes), "slo/short_wall",
// "slo/turn_wall/<band>", "slo/warm_ttft": n the rows judged, estimate the
// median figure, lo / hi the best and worst figure, threshold the floor (at
// the group's largest prompt where the floor grows with it), baseline the
// share of rows past the floor. "launch/server_cap": estimate the cap in
// tokens (-1 unlimited), threshold limits.min_server_cap.
//
// Pure, thread-agnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace soak {

// What the candidate's launch fingerprint says of the runtime's cap on an
// answer when a request names no limit (MLX-LM --max-tokens, llama-server
// -n), and what the candidate asks of it. The campaign fills it from the
// candidate row's fingerprint (campaigns/builds.cc); absent when the
// fingerprint does not know the cap.
struct LaunchCap {
  int64_t tokens = -1;                        // the default cap; -1: unlimited
  int64_t min_tokens = kDefaultMinServerCap;  // limits.min_server_cap
  bool accepted = false;                      // the candidate's accept_server_cap
  std::string lift;                           // how to lift it, in the runtime's words
  bool operator==(const LaunchCap&) const = default;
};

// Written into a recipe's JSON only when present; read back (absent: nullopt).
// from_json throws nlohmann::json exceptions on malformed values (the
// recipe reader catches them).
void floors_to_json(const std::optional<SloSettings>& slo, const std::optional<LaunchCap>& cap,
                    nlohmann::ordered_json& j);
void floors_from_json(const nlohmann::ordered_json& j, std::optional<SloSettings>& slo, std::optional<LaunchCap>& cap);

}  // namespace soak
