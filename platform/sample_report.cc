#include "platform/sample_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/byte_size.h"
#include "core/duration.h"
#include "platform/darwin_figures.h"

namespace soak {
namespace {

constexpr size_t kReportCommandChars = 120;

std::string opt_int(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string opt_psi(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }

std::string pressure_text(const std::optional<int>& level) {
  if (!level) return "-";
  switch (*level) {
    case darwin::kPressureNormal: return "normal";
    case darwin::kPressureWarn: return "warn";
    case darwin::kPressureCritical: return "CRITICAL";
  }
  return std::to_string(*level);
}

template <class T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string format_bytes(std::optional<int64_t> bytes) { return bytes ? format_bytes(*bytes) : "-"; }

SampleReport collect_sample_report(Sampler& sampler, const Config& cfg, int64_t wall_ms) {
  SampleReport r;
  auto host = sampler.host_info();
  if (host)
    r.host = *host;
  else
    r.host_error = host.message();
  r.host_sample = sampler.sample_host(wall_ms);
  for (const auto& c : cfg.candidates) {
    if (!c.enabled) continue;
    CandidateProcessReport cr;
    cr.candidate = c.name;
    cr.runtime = std::string(to_string(c.runtime));
    cr.located = locate_candidate_process(sampler, c);
    if (cr.located.pid) cr.sample = sampler.sample_process(*cr.located.pid, wall_ms);
    r.candidates.push_back(std::move(cr));
  }
  auto procs = sampler.list_processes();
  if (procs)
    r.engines = find_engines(*procs, sampler.runtimes());
  else
    r.engines_error = procs.message();
  return r;
}

std::string render_sample_text(const SampleReport& r) {
  const HostSample& s = r.host_sample;
  std::string out;
  auto line = [&](std::string_view label, const std::string& text) { out += fmt::format("{:<11}{}\n", label, text); };

  if (r.host_error.empty()) {
    line("host", fmt::format("{} — {}, {} memory, {}", r.host.hostname, r.host.hw_model, format_bytes(r.host.mem_bytes),
                             r.host.os_version));
  } else {
    line("host", "unknown (" + r.host_error + ")");
  }
  line("sampled", iso_utc(s.wall_ms));
  line("memory", fmt::format("total {}  available {}  free {}  active {}  inactive {}  wired {}  compressed {}",
                             format_bytes(s.total_bytes), format_bytes(s.available_bytes), format_bytes(s.free_bytes),
                             format_bytes(s.active_bytes), format_bytes(s.inactive_bytes), format_bytes(s.wired_bytes),
                             format_bytes(s.compressed_bytes)));
  line("swap", fmt::format("used {} of {}  swapins {}  swapouts {}  pageins {}  pageouts {}",
                           format_bytes(s.swap_used_bytes), format_bytes(s.swap_total_bytes), opt_int(s.swapins),
                           opt_int(s.swapouts), opt_int(s.pageins), opt_int(s.pageouts)));
  std::string memstatus = s.memorystatus_level ? std::to_string(*s.memorystatus_level) + "% free" : "-";
  line("pressure",
       fmt::format("level {}  memorystatus {}  PSI some avg10 {}  full avg10 {}", pressure_text(s.pressure_level),
                   memstatus, opt_psi(s.psi_some_avg10), opt_psi(s.psi_full_avg10)));
  line("errors", s.error.empty() ? "none" : s.error);

  out += "\ncandidates\n";
  if (r.candidates.empty())
    out += "  (none enabled in the config)\n";
  else {
    out += fmt::format("  {:<20} {:<10} {:>7} {:<8} {:>10} {:>10} {:>10} {:>10}  {}\n", "NAME", "RUNTIME", "PID",
                       "FOUND BY", "FOOTPRINT", "RESIDENT", "SWAP", "PSS", "NOTE");
  }
  for (const auto& c : r.candidates) {
    const ProcessSample* p = c.sample ? &*c.sample : nullptr;
    std::string note = c.located.detail;
    if (p && !p->error.empty()) note += " [" + p->error + "]";
    out += fmt::format(
        "  {:<20} {:<10} {:>7} {:<8} {:>10} {:>10} {:>10} {:>10}  {}\n", c.candidate, c.runtime,
        c.located.pid ? std::to_string(*c.located.pid) : "-",
        c.located.pid ? std::string(to_string(c.located.source)) : "-",
        format_bytes(p ? p->footprint_bytes : std::nullopt), format_bytes(p ? p->resident_bytes : std::nullopt),
        format_bytes(p ? p->swap_bytes : std::nullopt), format_bytes(p ? p->pss_bytes : std::nullopt), note);
  }

  out += fmt::format("\nengines running: {}\n",
                     r.engines_error.empty() ? std::to_string(r.engines.size()) : "unknown (" + r.engines_error + ")");
  for (const auto& e : r.engines) {
    out += fmt::format("  {:>7} {:<10} {}\n", e.process.pid, to_string(e.kind),
                       display_command(e.process, kReportCommandChars));
  }
  if (r.engines.size() > 1) out += "  more than one engine is resident: they compete for the same memory and GPU\n";
  return out;
}

std::string render_sample_json(const SampleReport& r) {
  const HostSample& s = r.host_sample;
  nlohmann::json j;
  j["host"] = r.host_error.empty() ? nlohmann::json{{"hostname", r.host.hostname},
                                                    {"hw_model", r.host.hw_model},
                                                    {"mem_bytes", r.host.mem_bytes},
                                                    {"os_version", r.host.os_version}}
                                   : nlohmann::json{{"error", r.host_error}};
  j["sample"] = {{"wall_ms", s.wall_ms},
                 {"total_bytes", opt_json(s.total_bytes)},
                 {"available_bytes", opt_json(s.available_bytes)},
                 {"free_bytes", opt_json(s.free_bytes)},
                 {"active_bytes", opt_json(s.active_bytes)},
                 {"inactive_bytes", opt_json(s.inactive_bytes)},
                 {"wired_bytes", opt_json(s.wired_bytes)},
                 {"compressed_bytes", opt_json(s.compressed_bytes)},
                 {"swap_used_bytes", opt_json(s.swap_used_bytes)},
                 {"swap_total_bytes", opt_json(s.swap_total_bytes)},
                 {"pageins", opt_json(s.pageins)},
                 {"pageouts", opt_json(s.pageouts)},
                 {"swapins", opt_json(s.swapins)},
                 {"swapouts", opt_json(s.swapouts)},
                 {"pressure_level", opt_json(s.pressure_level)},
                 {"memorystatus_level", opt_json(s.memorystatus_level)},
                 {"psi_some_avg10", opt_json(s.psi_some_avg10)},
                 {"psi_full_avg10", opt_json(s.psi_full_avg10)},
                 {"psi_some_total_us", opt_json(s.psi_some_total_us)},
                 {"psi_full_total_us", opt_json(s.psi_full_total_us)},
                 {"error", s.error}};
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : r.candidates) {
    nlohmann::json cj{{"name", c.candidate},
                      {"runtime", c.runtime},
                      {"pid", opt_json(c.located.pid)},
                      {"found_by", std::string(to_string(c.located.source))},
                      {"detail", c.located.detail}};
    if (c.sample) {
      const ProcessSample& p = *c.sample;
      cj["process"] = {{"name", p.name},
                       {"start_time", opt_json(p.start_time)},
                       {"footprint_bytes", opt_json(p.footprint_bytes)},
                       {"resident_bytes", opt_json(p.resident_bytes)},
                       {"swap_bytes", opt_json(p.swap_bytes)},
                       {"pss_bytes", opt_json(p.pss_bytes)},
                       {"error", p.error}};
    }
    j["candidates"].push_back(std::move(cj));
  }
  j["engines"] = nlohmann::json::array();
  for (const auto& e : r.engines) {
    j["engines"].push_back({{"pid", e.process.pid},
                            {"runtime", std::string(to_string(e.kind))},
                            {"command", display_command(e.process, kReportCommandChars)}});
  }
  if (!r.engines_error.empty()) j["engines_error"] = r.engines_error;
  return j.dump(2);
}

}  // namespace soak
