// Answer hygiene over a stage (judges/hard.cc, docs/DESIGN.md §3.4): answers
// whose content carried leaked markup are a hard class of their own, tolerated
// up to judge.max_invalid_ratio of the answers read, the first row's detail
// and excerpt in the reason; a canary whose every answer leaks is rejected at
// its first check; leaked rows are neither good nor bad structured output or
// tool calls.
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr const char* kDetail = "chat-template token <|im_end|> at char 10 of 20 in the answer content";
constexpr const char* kExcerpt = "RIVER-4821<|im_end|>";

// A leaked answer as the probes write it (probes/answer_check.h).
ProbeResult& leaked(Rows& rows, ProbeKind kind = ProbeKind::Marker, std::string workload = "marker") {
  ProbeResult& r = rows.add(kind, std::move(workload), Outcome::LeakedMarkup);
  r.detail = kDetail;
  r.excerpt = kExcerpt;
  r.content_events = 12;
  return r;
}

// A canary that would be promoted on its own: 30 streamed answers a side.
struct Canary {
  Rows cand{kCandidate, 1};
  Rows base{kBaseline, 100'000};
  JudgeInput in = input_for(StageKind::Canary);

  Canary() {
    add_perf(cand, 30, Perf{}, 1);
    add_perf(base, 30, Perf{}, 5000);
    for (auto* rows : {&cand, &base})
      for (auto& r : rows->rows) r.content_events = 100;
  }
  VerdictRow judge() {
    in.candidate_rows = cand.rows;
    in.baseline_rows = base.rows;
    return judge_stage(in);
  }
};

void add_turn(Rows& rows, int64_t turn, bool tool_required, Outcome outcome) {
  ProbeResult& r = rows.add(ProbeKind::Agent, "agent", outcome);
  r.size_tokens = 0;
  r.content_events = 8;
  r.extra_json = nlohmann::json{{"session", 0},
                                {"turn", turn},
                                {"context_tokens", 2'000},
                                {"band", "0-10K"},
                                {"tool_required", tool_required},
                                {"recovery", false},
                                {"thinking", false}}
                     .dump();
  if (outcome == Outcome::LeakedMarkup) r.detail = kDetail;
}

}  // namespace

TEST_CASE("a healthy canary shows no leaked_markup row and is promoted") {
  Canary h;
  const VerdictRow v = h.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  CHECK_FALSE(find_metric(v, "hard/leaked_markup"));  // omitted while none was seen (judges/hard.cc)
}

TEST_CASE("leaked markup is tolerated up to max_invalid_ratio of the answers read, its excerpt in the reason") {
  Canary h;
  h.in.recipe.judge.max_invalid_ratio = 0.05;
  leaked(h.cand);
  // 1 of 31 answers read (3.2 %): within the tolerance, and shown.
  VerdictRow within = h.judge();
  const MetricEvidence* m = find_metric(within, "hard/leaked_markup");
  REQUIRE(m);
  INFO(m->reason);
  CHECK(m->result == MetricResult::Pass);
  CHECK(m->n == 31);
  CHECK(m->estimate == Approx(1.0 / 31));
  CHECK(m->threshold == Approx(0.05));
  CHECK_FALSE(contains(within.reason, "leaked_markup beyond tolerance"));

  // 3 of 33 (9.1 %): beyond it, a hard failure named first, quoting the first row.
  leaked(h.cand);
  leaked(h.cand, ProbeKind::Stream, "stream");
  const VerdictRow v = h.judge();
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(v.reason.rfind("canary rejected: hard failure, leaked_markup beyond tolerance: 3 of 33 answers carried markup "
                       "(9.1%), tolerance 5.0%; rows 31, 32, 33, first marker row 31",
                       0) == 0);
  CHECK(contains(v.reason, kDetail));
  CHECK(contains(v.reason, std::string("excerpt: ") + kExcerpt));
  m = find_metric(v, "hard/leaked_markup");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(m->n == 33);
}

TEST_CASE("only rows whose answer was read count: no content, a broken contract, a cut, soakd's own are not answers") {
  Canary h;
  h.in.recipe.judge.max_invalid_ratio = 0.05;
  leaked(h.cand);
  h.cand.add(ProbeKind::Health, "health");  // no answer
  h.cand.add(ProbeKind::Scrape, "scrape");
  ProbeResult& stalled = h.cand.add(ProbeKind::Stream, "stream", Outcome::Stalled);  // content, contract broken
  stalled.content_events = 3;
  h.cand.add(ProbeKind::Cancel, "cancel").content_events = 5;  // cut on purpose, never read
  h.cand.add(ProbeKind::Stream, "stream", Outcome::HarnessError).content_events = 5;
  h.cand.add(ProbeKind::ToolCall, "tool_call").content_events = 4;  // a tool call is an answer read
  h.cand.add(ProbeKind::Marker, "marker", Outcome::MissingMarker).content_events = 2;
  const VerdictRow v = h.judge();
  const MetricEvidence* m = find_metric(v, "hard/leaked_markup");
  REQUIRE(m);
  INFO(m->reason);
  CHECK(m->n == 30 + 1 + 1 + 1);
}

TEST_CASE("a canary whose every answer leaks is rejected at its first hard check") {
  Rows cand{kCandidate, 1};
  JudgeInput in = input_for(StageKind::Canary);
  for (ProbeKind k : {ProbeKind::Marker, ProbeKind::Stream, ProbeKind::StrictJson, ProbeKind::Thinking,
                      ProbeKind::Thinking, ProbeKind::Repetition})
    leaked(cand, k, std::string(to_string(k)));
  in.candidate_rows = cand.rows;
  auto v = judge_hard_failures(in);
  REQUIRE(v);
  INFO(v->reason);
  CHECK(v->state == VerdictState::Rejected);
  // The markup is named before the failure ratios the same rows trip.
  CHECK(v->reason.rfind("canary rejected: hard failure, leaked_markup beyond tolerance: 6 of 6 answers", 0) == 0);
}

TEST_CASE("leaked rows are neither good nor bad structured output, nor tool-call turns") {
  SECTION("strict JSON") {
    Canary h;
    for (int i = 0; i < 19; ++i) h.cand.add(ProbeKind::StrictJson, "strict_json").content_events = 5;
    h.cand.add(ProbeKind::StrictJson, "strict_json", Outcome::InvalidJson).content_events = 5;
    for (int i = 0; i < 10; ++i) leaked(h.cand, ProbeKind::StrictJson, "strict_json");
    const VerdictRow v = h.judge();
    const MetricEvidence* m = find_metric(v, "hard/invalid_json");
    REQUIRE(m);
    CHECK(m->n == 20);  // the 10 leaked rows' JSON was not judged
    CHECK(find_metric(v, "hard/leaked_markup")->n == 30 + 20 + 10);
  }
  SECTION("agent turns in the gate: counted as answers, kept out of the tool-call bands") {
    Rows rows(kCandidate);
    for (int i = 0; i < 40; ++i) add_turn(rows, i + 1, i % 2 == 0, Outcome::Clean);
    for (int i = 0; i < 10; ++i) add_turn(rows, 41 + i, true, Outcome::LeakedMarkup);
    JudgeInput in = input_for(StageKind::Gate);
    in.recipe.gate.min_completed = 1;
    in.baseline_rows.clear();
    in.candidate_rows = rows.rows;
    const VerdictRow v = judge_stage(in);
    INFO(v.reason);
    CHECK(v.state == VerdictState::Rejected);
    CHECK(contains(v.reason, "leaked_markup beyond tolerance: 10 of 50 answers"));
    const MetricEvidence* band = find_metric(v, "session/tool_calls/0-10K");
    REQUIRE(band);
    CHECK(band->n == 20);
    CHECK(band->result == MetricResult::Pass);
    if (const MetricEvidence* seq = find_metric(v, "sequential/tool_calls/0-10K")) CHECK(seq->n == 20);
  }
}
