#include "tests/fake_runtime/scenario.h"

#include <array>
#include <utility>

namespace soak::fake {
namespace {

constexpr std::array<std::pair<Flavour, std::string_view>, 7> kFlavours{{
    {Flavour::LlamaCpp, "llama.cpp"},
    {Flavour::MlxLm, "mlx-lm"},
    {Flavour::Omlx, "omlx"},
    {Flavour::Ollama, "ollama"},
    {Flavour::Vllm, "vllm"},
    {Flavour::RapidMlx, "rapid-mlx"},
    {Flavour::LmStudio, "lm-studio"},
}};

constexpr std::array<std::pair<Scenario, std::string_view>, 26> kScenarios{{
    {Scenario::Healthy, "healthy"},
    {Scenario::PrefillCost, "prefill-cost"},
    {Scenario::FifoSerial, "fifo"},
    {Scenario::OkNoBody, "ok-no-body"},
    {Scenario::NoDone, "no-done"},
    {Scenario::StallMidStream, "stall"},
    {Scenario::KeepalivesOnly, "keepalives-only"},
    {Scenario::Burst5xx, "burst-5xx"},
    {Scenario::ModelAlias, "model-alias"},
    {Scenario::EmptyToolArgs, "empty-tool-args"},
    {Scenario::InvalidJson, "invalid-json"},
    {Scenario::RepetitionLoop, "repetition"},
    {Scenario::StuckSlotAfterCancel, "stuck-slot"},
    {Scenario::CrashAfterN, "crash"},
    {Scenario::DraftSlowdown, "draft-slowdown"},
    {Scenario::MemoryLeak, "memory-leak"},
    {Scenario::Loading, "loading"},
    {Scenario::LargePrompt5xx, "large-prompt-5xx"},
    {Scenario::DeepToolDrop, "deep-tool-drop"},
    {Scenario::Thinking5xx, "thinking-5xx"},
    {Scenario::UnstablePooling, "unstable-pooling"},
    {Scenario::EmptyContent, "empty-content"},
    {Scenario::ReasoningOnly, "reasoning-only"},
    {Scenario::ResetOverSlots, "reset-over-slots"},
    {Scenario::MarkupLeak, "markup-leak"},
    {Scenario::StopServing, "stop-serving"},
}};

constexpr std::array<std::pair<Leak, std::string_view>, 5> kLeaks{{
    {Leak::Think, "think"},
    {Leak::ImEnd, "im-end"},
    {Leak::Harmony, "harmony"},
    {Leak::Fffd, "fffd"},
    {Leak::Eos, "eos"},
}};

template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, n] : table)
    if (v == e) return n;
  return "?";
}

template <class E, size_t N>
std::optional<E> parse_from(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [v, n] : table)
    if (n == s) return v;
  return std::nullopt;
}

template <class E, size_t N>
std::string names_of(const std::array<std::pair<E, std::string_view>, N>& table) {
  std::string out;
  for (const auto& [v, n] : table) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

std::string_view to_string(Flavour f) { return name_of(kFlavours, f); }
std::optional<Flavour> parse_flavour(std::string_view s) { return parse_from(kFlavours, s); }
std::string flavour_names() { return names_of(kFlavours); }

std::string_view to_string(Scenario s) { return name_of(kScenarios, s); }
std::optional<Scenario> parse_scenario(std::string_view s) { return parse_from(kScenarios, s); }
std::string scenario_names() { return names_of(kScenarios); }

std::string_view to_string(Leak l) { return name_of(kLeaks, l); }
std::optional<Leak> parse_leak(std::string_view s) { return s.empty() ? Leak::Think : parse_from(kLeaks, s); }
std::string leak_names() { return names_of(kLeaks); }

Knobs scenario_defaults(Scenario s, Flavour f) {
  Knobs k;
  if (f == Flavour::MlxLm) k.server_max_tokens = kMlxLmServerMaxTokens;
  switch (s) {
    case Scenario::PrefillCost: k.prefill_ms_per_1k = kPrefillScenarioMsPer1k; break;
    case Scenario::FifoSerial: k.slots = 1; break;
    case Scenario::StuckSlotAfterCancel:
      // One slot so the stuck slot blocks the very next request.
      k.slots = 1;
      break;
    case Scenario::Loading: k.loading_ms = kDefaultLoadingMs; break;
    default: break;
  }
  return k;
}

}  // namespace soak::fake
