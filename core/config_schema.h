// The config's schema: one table per section (core/config_reader.h says what a
// row holds). Adding a key is one row in core/config_schema.cc; its parsing, its
// bounds and the example in its errors all come from that row. Defaults are not
// in the tables: they are the struct initializers in core/config.h (named
// constants), which reading only overwrites.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/config_reader.h"

namespace soak::schema {

// Campaign settings: under "defaults", and embedded in each candidate.
const Section<StageDurations>& stages_section();            // "stages"
const Section<Cadences>& cadence_section();                 // "cadence"
const Section<Limits>& limits_section();                    // "limits"
const Section<GateRules>& gate_section();                   // "gate"
const Section<JudgeRules>& judge_section();                 // "judge"
const Section<SoakRules>& soak_section();                   // "soak"
const Section<GuardRules>& guard_section();                 // "guard"
const Section<AgentSettings>& agent_section();              // "agent"
const Section<Sampling>& sampling_section();                // "sampling"
const Section<SloSettings>& slo_section();                  // "slo" (core/config_slo.cc)
const Section<EquivalenceSettings>& equivalence_section();  // "equivalence" (core/config_equivalence.cc)
const Section<CampaignSettings>& campaign_section();        // all of the above plus the size lists

const Section<BuildSpec>& build_section();            // candidates[i].build
const Section<CandidateConfig>& candidate_section();  // candidates[i]: its own keys + the campaign keys
const Section<LaunchSpec>& launch_section();          // candidates[i].launch (core/config_launch.cc)
const Section<SamplerSettings>& sampler_section();    // "sampler"
const Section<ScheduleSettings>& schedule_section();  // "schedule"
const Section<MetricsSettings>& metrics_section();    // "metrics"
const Section<NotifySettings>& notify_section();      // "notify" (core/config_notify.cc)
// The file's top level. "candidates" is a row without a reader: parse_config
// reads them once "defaults" is known, whatever the key order in the file.
const Section<Config>& top_section();

// Rules across keys of one campaign's settings (after defaults and overrides merged).
void check_campaign(ReadContext& ctx, const std::string& path, const CampaignSettings& s);
// The wall timeout against the capacity check's last member (core/config_capacity.cc);
// `slots` is the candidate's, when set.
void check_capacity_budget(ReadContext& ctx, const std::string& path, const CampaignSettings& s,
                           std::optional<int> slots);

// ~ and paths relative to the config file's directory (ctx.base_dir).
std::string resolve_path(const ReadContext& ctx, const std::string& p);

// A candidate's "launch" block and "memory_budget" (core/config_launch.cc), and
// the rules across a managed candidate's keys: no pid or process_name (the
// launched pid is sampled), a loopback base_url, and a port in its argv, when
// given there, equal to base_url's.
void read_launch(ReadContext& ctx, const json& v, const std::string& path, const std::string& example,
                 CandidateConfig& c);
void read_memory_budget(ReadContext& ctx, const json& v, const std::string& path, const std::string& example,
                        CandidateConfig& c);
void check_launch(ReadContext& ctx, const std::string& path, const CandidateConfig& c);
// "ab" (core/config_launch.cc): "history" or "interleaved"; check_launch
// refuses "interleaved" where soakd cannot start the previous build beside
// the new one (no launch block, no port it can replace, an interpreter whose
// program stays the same across builds).
void read_ab(ReadContext& ctx, const json& v, const std::string& path, const std::string& example, CandidateConfig& c);

// An http(s) base URL, split far enough to check it.
struct Url {
  std::string scheme, host;
  uint16_t port = 0;  // as written, else the scheme's (80, 443)
  bool ok = false;
};
Url split_url(const std::string& s);
bool is_loopback_host(const std::string& host);

}  // namespace soak::schema
