// The config's "equivalence" block (core/config.h EquivalenceSettings,
// docs/DESIGN.md §3.13): whether the golden set runs for a chat candidate, and
// the rules its comparison across builds stands on.
#include "core/config_schema.h"

namespace soak::schema {

namespace {

void read_enabled(ReadContext& ctx, const json& v, const std::string& p, const std::string&, EquivalenceSettings& s) {
  bool on = s.enabled == EquivalenceSwitch::On;
  if (read_bool(ctx, v, p, on)) s.enabled = on ? EquivalenceSwitch::On : EquivalenceSwitch::Off;
}

}  // namespace

const Section<EquivalenceSettings>& equivalence_section() {
  using S = EquivalenceSettings;
  static const Section<S> s{
      "{\"enabled\": true, \"max_fork_margin\": 0.1}",
      {
          custom<S>("enabled", Kind::Bool, "true", read_enabled),
          number("max_fork_margin", &S::max_fork_margin, 0, 100,
                 "0.1 (nats: a fork where either side's top-1 beat its top-2 by more is a changed answer)"),
          number("kl_factor", &S::kl_factor, 1, 1e6, "2 (the mean KL may be this many times the noise floor's)"),
          number("min_kl", &S::min_kl, 0, 100, "0.001 (nats: the KL threshold never goes below it)"),
      }};
  return s;
}

}  // namespace soak::schema
