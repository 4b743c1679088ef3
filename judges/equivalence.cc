#include "judges/equivalence.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "judges/internal.h"

namespace soak {

using judge_detail::format;

namespace {

// Probabilities below this are taken as this in the KL's denominator: a token
// one side lists and the other leaves with nothing would otherwise weigh
// infinitely (e^-20.7: far below any top-k entry a runtime returns).
constexpr double kKlProbFloor = 1e-9;

bool same_token(const TokenChoice& x, const TokenChoice& y) {
  if (x.id && y.id) return *x.id == *y.id;
  return x.token == y.token;
}

std::optional<double> margin_at(const TokenStep& s) {
  if (s.top.size() < 2) return std::nullopt;
  return s.top[0].logprob - s.top[1].logprob;
}

bool has_logprobs(const GoldenAnswer& a) { return a.logprobs == LogprobShape::TopK && !a.steps.empty(); }

// The first step whose chosen token ranks below the top-1 by more than the
// margin: a sampler that is not greedy (or logprobs that are not the answer's).
std::optional<PromptComparison::NotTop1> first_not_top1(const GoldenAnswer& ans, char side, double max_margin) {
  if (!has_logprobs(ans)) return std::nullopt;
  for (size_t i = 0; i < ans.steps.size(); ++i) {
    const TokenStep& s = ans.steps[i];
    if (s.top.empty() || same_token(s.chosen, s.top[0])) continue;
    double chosen_lp = s.chosen.logprob;
    for (const TokenChoice& t : s.top)
      if (same_token(t, s.chosen)) chosen_lp = t.logprob;
    const double gap = s.top[0].logprob - chosen_lp;
    if (gap > max_margin)
      return PromptComparison::NotTop1{side, static_cast<int64_t>(i), s.chosen.token, s.top[0].token, gap};
  }
  return std::nullopt;
}

std::string shown(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string margin_text(const std::optional<double>& m) {
  return m ? format("margin %.3f", *m) : std::string("margin unknown");
}

bool judged_on_text(const PromptComparison& c, const GoldenAnswer& a, const GoldenAnswer& b) {
  return c.status == PromptStatus::TextDiffers || !has_logprobs(a) || !has_logprobs(b);
}

}  // namespace

std::string_view to_string(PromptStatus s) {
  switch (s) {
    case PromptStatus::Equal: return "equal";
    case PromptStatus::NearTie: return "near_tie";
    case PromptStatus::Fork: return "fork";
    case PromptStatus::NotTop1: return "not_top1";
    case PromptStatus::TextDiffers: return "text_differs";
    case PromptStatus::Missing: return "missing";
  }
  return "equal";
}

std::string_view to_string(Presence p) {
  switch (p) {
    case Presence::Answered: return "answered";
    case Presence::Unanswered: return "asked, not answered";
    case Presence::Absent: return "not asked";
  }
  return "answered";
}

int64_t EquivalenceResult::compared() const {
  return std::count_if(prompts.begin(), prompts.end(),
                       [](const PromptComparison& p) { return p.status != PromptStatus::Missing; });
}

std::string_view to_string(EquivalenceVerdict v) {
  switch (v) {
    case EquivalenceVerdict::Equivalent: return "equivalent";
    case EquivalenceVerdict::NotEquivalent: return "not_equivalent";
    case EquivalenceVerdict::Insufficient: return "insufficient";
  }
  return "insufficient";
}

double PromptComparison::mean_kl() const {
  return compared_positions > 0 ? kl_sum / static_cast<double>(compared_positions) : 0;
}

double NoiseFloor::text_difference_rate() const {
  return prompts > 0 ? static_cast<double>(text_differences) / static_cast<double>(prompts) : 0;
}

double topk_kl(const std::vector<TokenChoice>& p, const std::vector<TokenChoice>& q) {
  if (p.empty()) return 0;
  double p_listed = 0;
  for (const TokenChoice& t : p) p_listed += std::exp(t.logprob);
  double q_listed = 0;
  double q_least = 1;
  for (const TokenChoice& t : q) {
    q_listed += std::exp(t.logprob);
    q_least = std::min(q_least, std::exp(t.logprob));
  }
  if (q.empty()) q_least = 0;
  const double q_unlisted = std::max(0.0, 1 - q_listed);

  std::vector<double> qs(p.size(), -1);
  size_t missing = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    for (const TokenChoice& t : q)
      if (same_token(p[i], t)) qs[i] = std::exp(t.logprob);
    if (qs[i] < 0) ++missing;
  }
  // What q did not list is shared among p's tokens it left out and the tail;
  // none of them can be above q's least listed probability.
  const double share = missing > 0 ? std::min(q_least, q_unlisted / static_cast<double>(missing + 1)) : 0;
  double q_buckets = 0;
  for (double& v : qs) {
    if (v < 0) v = share;
    q_buckets += v;
  }
  const double p_tail = std::max(0.0, 1 - p_listed);
  const double q_tail = std::max(0.0, 1 - q_buckets);

  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = std::exp(p[i].logprob);
    kl += pi * std::log(pi / std::max(qs[i], kKlProbFloor));
  }
  if (p_tail > 0) kl += p_tail * std::log(p_tail / std::max(q_tail, kKlProbFloor));
  return std::isfinite(kl) ? std::max(0.0, kl) : 0;
}

PromptComparison compare_answers(const GoldenAnswer& a, const GoldenAnswer& b, const EquivalenceSettings& rules,
                                 TopOneRule top1) {
  PromptComparison c;
  c.prompt_id = a.prompt_id;
  if (!a.answered() || !b.answered()) {
    c.status = PromptStatus::Missing;
    c.in_a = a.answered() ? Presence::Answered : Presence::Unanswered;
    c.in_b = b.answered() ? Presence::Answered : Presence::Unanswered;
    return c;
  }
  if (a.steps.empty() || b.steps.empty()) {
    c.status = a.text_hash == b.text_hash ? PromptStatus::Equal : PromptStatus::TextDiffers;
    return c;
  }
  const size_t n = std::min(a.steps.size(), b.steps.size());
  size_t i = 0;
  int64_t agree = 0;
  const bool weigh = has_logprobs(a) && has_logprobs(b);
  for (; i < n; ++i) {
    const TokenStep& sa = a.steps[i];
    const TokenStep& sb = b.steps[i];
    if (!same_token(sa.chosen, sb.chosen)) break;
    if (!weigh || sa.top.empty() || sb.top.empty()) continue;
    ++c.compared_positions;
    if (same_token(sa.top[0], sb.top[0])) ++agree;
    c.kl_sum += topk_kl(sa.top, sb.top);
  }
  if (c.compared_positions > 0)
    c.top1_agreement = static_cast<double>(agree) / static_cast<double>(c.compared_positions);

  if (top1 == TopOneRule::AllPrompts || !constrained_prompt(a.prompt_id)) {
    c.not_top1 = first_not_top1(a, 'a', rules.max_fork_margin);
    if (!c.not_top1) c.not_top1 = first_not_top1(b, 'b', rules.max_fork_margin);
  }

  const bool forked = i < n || a.steps.size() != b.steps.size();
  if (forked) {
    c.fork_index = static_cast<int64_t>(i);
    // A side that ended here forks with its end: no token, no margin.
    if (i < a.steps.size()) {
      c.a.token = a.steps[i].chosen.token;
      if (has_logprobs(a)) c.a.margin = margin_at(a.steps[i]);
    } else {
      c.a.token = "<end>";
    }
    if (i < b.steps.size()) {
      c.b.token = b.steps[i].chosen.token;
      if (has_logprobs(b)) c.b.margin = margin_at(b.steps[i]);
    } else {
      c.b.token = "<end>";
    }
  }

  if (c.not_top1) {
    c.status = PromptStatus::NotTop1;
  } else if (!forked) {
    c.status = PromptStatus::Equal;
  } else if (!c.a.margin && !c.b.margin) {
    c.status = PromptStatus::TextDiffers;
  } else {
    const bool clear =
        (c.a.margin && *c.a.margin > rules.max_fork_margin) || (c.b.margin && *c.b.margin > rules.max_fork_margin);
    c.status = clear ? PromptStatus::Fork : PromptStatus::NearTie;
  }
  return c;
}

EquivalenceResult compare_runs(const GoldenRun& a, const GoldenRun& b, const EquivalenceSettings& rules,
                               const std::optional<NoiseFloor>& floor, TopOneRule top1) {
  EquivalenceResult r;
  std::map<std::string, const GoldenAnswer*> in_b;
  for (const GoldenAnswer& x : b.answers) in_b.emplace(x.prompt_id, &x);
  std::map<std::string, bool> seen;
  double kl_sum = 0;
  int64_t compared = 0;
  for (const GoldenAnswer& x : a.answers) {
    if (!seen.emplace(x.prompt_id, true).second) continue;
    auto it = in_b.find(x.prompt_id);
    if (it == in_b.end()) {
      PromptComparison c;
      c.prompt_id = x.prompt_id;
      c.status = PromptStatus::Missing;
      c.in_a = x.answered() ? Presence::Answered : Presence::Unanswered;
      c.in_b = Presence::Absent;
      r.prompts.push_back(std::move(c));
      continue;
    }
    PromptComparison c = compare_answers(x, *it->second, rules, top1);
    if (c.status == PromptStatus::Missing) {
      r.prompts.push_back(std::move(c));
      continue;
    }
    ++compared;
    r.positions += c.compared_positions;
    kl_sum += c.kl_sum;
    if (judged_on_text(c, x, *it->second)) {
      ++r.text_prompts;
      if (c.status != PromptStatus::Equal) ++r.text_differences;
    }
    r.prompts.push_back(std::move(c));
  }
  for (const GoldenAnswer& x : b.answers) {
    if (!seen.emplace(x.prompt_id, true).second) continue;
    PromptComparison c;
    c.prompt_id = x.prompt_id;
    c.status = PromptStatus::Missing;
    c.in_a = Presence::Absent;
    c.in_b = x.answered() ? Presence::Answered : Presence::Unanswered;
    r.prompts.push_back(std::move(c));
  }

  r.mean_kl = r.positions > 0 ? kl_sum / static_cast<double>(r.positions) : 0;
  const double floor_kl = floor ? floor->mean_kl : 0;
  r.kl_threshold = std::max(rules.kl_factor * floor_kl, rules.min_kl);
  r.text_rate_limit = floor ? floor->text_difference_rate() : 0;

  for (const PromptComparison& c : r.prompts)
    if (c.status == PromptStatus::Fork || c.status == PromptStatus::NotTop1)
      r.reasons.push_back("prompt " + c.prompt_id + ": " + describe(c));
  if (r.positions > 0 && r.mean_kl > r.kl_threshold)
    r.reasons.push_back(format(
        "mean top-k KL %.4f nats over %lld positions above %.4f (kl_factor %.2g x noise "
        "floor %.4f, at least min_kl %.4f)",
        r.mean_kl, static_cast<long long>(r.positions), r.kl_threshold, rules.kl_factor, floor_kl, rules.min_kl));
  if (r.text_prompts > 0) {
    const double rate = static_cast<double>(r.text_differences) / static_cast<double>(r.text_prompts);
    if (rate > r.text_rate_limit)
      r.reasons.push_back(
          format("%lld of %lld prompts judged on text differ (%.1f%%), above the noise floor's "
                 "%.1f%% (%lld of %lld)",
                 static_cast<long long>(r.text_differences), static_cast<long long>(r.text_prompts), rate * 100,
                 r.text_rate_limit * 100, static_cast<long long>(floor ? floor->text_differences : 0),
                 static_cast<long long>(floor ? floor->prompts : 0)));
  }
  if (compared == 0)
    r.verdict = EquivalenceVerdict::Insufficient;
  else
    r.verdict = r.reasons.empty() ? EquivalenceVerdict::Equivalent : EquivalenceVerdict::NotEquivalent;
  return r;
}

NoiseFloor noise_floor(const GoldenRun& first, const GoldenRun& second, const EquivalenceSettings& rules,
                       TopOneRule top1) {
  const EquivalenceResult r = compare_runs(first, second, rules, std::nullopt, top1);
  NoiseFloor f;
  double kl_sum = 0;
  for (const PromptComparison& c : r.prompts) {
    if (c.status == PromptStatus::Missing) continue;
    ++f.prompts;
    if (c.status != PromptStatus::Equal) ++f.text_differences;
    f.positions += c.compared_positions;
    kl_sum += c.kl_sum;
  }
  f.mean_kl = f.positions > 0 ? kl_sum / static_cast<double>(f.positions) : 0;
  return f;
}

std::string describe(const PromptComparison& c) {
  if (c.status == PromptStatus::NotTop1 && c.not_top1) {
    const auto& n = *c.not_top1;
    return format("token %lld of run %c: greedy %s is not its top-1 %s (top-1 above it by %.3f nats)",
                  static_cast<long long>(n.index), n.side, shown(n.token).c_str(), shown(n.top1).c_str(), n.gap);
  }
  if (c.status == PromptStatus::Missing)
    return format("missing: run a %s, run b %s", std::string(to_string(c.in_a)).c_str(),
                  std::string(to_string(c.in_b)).c_str());
  if (!c.fork_index) return std::string(to_string(c.status));
  return format("%s at token %lld: %s (%s) vs %s (%s)", std::string(to_string(c.status)).c_str(),
                static_cast<long long>(*c.fork_index), shown(c.a.token).c_str(), margin_text(c.a.margin).c_str(),
                shown(c.b.token).c_str(), margin_text(c.b.margin).c_str());
}

std::string EquivalenceResult::summary() const {
  int64_t forks = 0, ties = 0, not_top1 = 0, missing = 0, equal = 0;
  for (const PromptComparison& c : prompts) {
    forks += c.status == PromptStatus::Fork;
    ties += c.status == PromptStatus::NearTie;
    not_top1 += c.status == PromptStatus::NotTop1;
    missing += c.status == PromptStatus::Missing;
    equal += c.status == PromptStatus::Equal;
  }
  return format(
      "%s: %lld of %lld prompts compared (answered on both sides), %lld equal, %lld fork(s), %lld near tie(s), "
      "%lld not top-1, %lld missing; mean KL %.4f over %lld positions (threshold %.4f); text %lld/%lld differ "
      "(floor rate %.1f%%)",
      std::string(to_string(verdict)).c_str(), static_cast<long long>(compared()),
      static_cast<long long>(prompts.size()), static_cast<long long>(equal), static_cast<long long>(forks),
      static_cast<long long>(ties), static_cast<long long>(not_top1), static_cast<long long>(missing), mean_kl,
      static_cast<long long>(positions), kl_threshold, static_cast<long long>(text_differences),
      static_cast<long long>(text_prompts), text_rate_limit * 100);
}

}  // namespace soak
