#include "core/tasks.h"

#include <array>
#include <utility>

namespace soak {

namespace {
constexpr std::array<std::pair<TaskKind, std::string_view>, 13> kTaskNames{{
    {TaskKind::Smoke, "smoke"},
    {TaskKind::Scrape, "scrape"},
    {TaskKind::Functional, "functional"},
    {TaskKind::LongContext, "long_context"},
    {TaskKind::Burst, "burst"},
    {TaskKind::Cancel, "cancel"},
    {TaskKind::Agent, "agent"},
    {TaskKind::SoakTraffic, "soak_traffic"},
    {TaskKind::Capacity, "capacity"},
    {TaskKind::PrefixReuse, "prefix_reuse"},
    {TaskKind::Warmup, "warmup"},
    {TaskKind::GoldenStart, "golden_start"},
    {TaskKind::GoldenEnd, "golden_end"},
}};
}  // namespace

std::string_view to_string(TaskKind k) {
  for (const auto& [kind, name] : kTaskNames)
    if (kind == k) return name;
  return "?";
}

std::optional<TaskKind> parse_task_kind(std::string_view s) {
  for (const auto& [kind, name] : kTaskNames)
    if (name == s) return kind;
  return std::nullopt;
}

std::optional<ProbeKind> pooling_probe(WorkloadKind workload) {
  switch (workload) {
    case WorkloadKind::Chat: return std::nullopt;
    case WorkloadKind::Embedding: return ProbeKind::Embeddings;
    case WorkloadKind::Rerank: return ProbeKind::Rerank;
  }
  return std::nullopt;
}

std::vector<ProbeKind> probe_kinds_for(TaskKind task, WorkloadKind workload) {
  if (auto pooled = pooling_probe(workload)) {
    switch (task) {
      case TaskKind::Smoke: return {ProbeKind::Health, *pooled};
      case TaskKind::Scrape: return {ProbeKind::Health, ProbeKind::Scrape};
      case TaskKind::Functional:
      case TaskKind::Agent:
      case TaskKind::Warmup:
      case TaskKind::SoakTraffic: return {*pooled};
      case TaskKind::Burst: return {ProbeKind::Burst};  // the engine sends pooling requests for a pooling candidate
      case TaskKind::LongContext:
      case TaskKind::Capacity:
      case TaskKind::Cancel:
      case TaskKind::PrefixReuse:
      case TaskKind::GoldenStart:
      case TaskKind::GoldenEnd: return {};
    }
    return {};
  }
  switch (task) {
    case TaskKind::Smoke:
      return {ProbeKind::Health, ProbeKind::Identity,   ProbeKind::Marker,
              ProbeKind::Stream, ProbeKind::StrictJson, ProbeKind::ToolCall};
    case TaskKind::Scrape: return {ProbeKind::Health, ProbeKind::Scrape};
    case TaskKind::Functional:
      return {ProbeKind::Marker,   ProbeKind::Stream,   ProbeKind::StrictJson,
              ProbeKind::ToolCall, ProbeKind::Thinking, ProbeKind::Repetition};
    case TaskKind::LongContext: return {ProbeKind::LongContext};
    case TaskKind::Burst: return {ProbeKind::Burst};
    case TaskKind::Capacity: return {ProbeKind::Capacity};
    case TaskKind::Cancel: return {ProbeKind::Cancel};
    case TaskKind::Agent:
    case TaskKind::SoakTraffic: return {ProbeKind::Agent};
    case TaskKind::PrefixReuse: return {ProbeKind::SharedPrefix};
    case TaskKind::Warmup: return {ProbeKind::Marker, ProbeKind::Stream};
    case TaskKind::GoldenStart:
    case TaskKind::GoldenEnd: return {ProbeKind::Equivalence};
  }
  return {};
}

}  // namespace soak
