// A canary's timed rows that overlapped another candidate's heavy work on the
// host are marked and left out of its comparisons (judges/overlap.h,
// docs/DESIGN.md §3.7). Pure; synthetic rows.
#include "judges/overlap.h"

#include "judges/judge.h"
#include "tests/catch.h"
#include "tests/unit/judge_rows.h"

using namespace soak;
using namespace soak::testing;

namespace {

constexpr int64_t kOther = 77;

ProbeResult timed(int64_t candidate, ProbeKind kind, int64_t start_ms, int64_t done_ms) {
  ProbeResult r;
  r.candidate_id = candidate;
  r.kind = kind;
  r.started_wall_ms = start_ms;
  r.t_done_us = done_ms * 1'000;
  return r;
}

}  // namespace

TEST_CASE("overlap: a row running during another candidate's heavy row is marked; others are not") {
  std::vector<ProbeResult> rows = {
      timed(kCandidate, ProbeKind::Stream, 0, 900),          // ends before the other's prefill starts
      timed(kCandidate, ProbeKind::Stream, 900, 300),        // inside it
      timed(kCandidate, ProbeKind::Stream, 1'800, 400),      // starts inside, ends after
      timed(kCandidate, ProbeKind::Stream, 2'500, 100),      // after it
      timed(kCandidate, ProbeKind::LongContext, 1'500, 50),  // the candidate's own long context, beside it
  };
  const std::vector<ProbeResult> others = {
      timed(kOther, ProbeKind::LongContext, 1'000, 1'000),  // 1.0 s to 2.0 s
      timed(kOther, ProbeKind::Stream, 2'500, 100),         // light: no load worth marking
      timed(kCandidate, ProbeKind::Burst, 2'500, 100),      // the candidate's own heavy work
  };
  CHECK(mark_overlapped_heavy(rows, others) == 3);
  CHECK_FALSE(rows[0].overlapped_heavy);
  CHECK(rows[1].overlapped_heavy);
  CHECK(rows[2].overlapped_heavy);
  CHECK_FALSE(rows[3].overlapped_heavy);
  CHECK(rows[4].overlapped_heavy);
}

TEST_CASE("overlap: heavy work is long context, bursts, capacity and prefix reuse") {
  CHECK(is_heavy_kind(ProbeKind::LongContext));
  CHECK(is_heavy_kind(ProbeKind::Burst));
  CHECK(is_heavy_kind(ProbeKind::Capacity));
  CHECK(is_heavy_kind(ProbeKind::SharedPrefix));
  CHECK_FALSE(is_heavy_kind(ProbeKind::Stream));
  CHECK_FALSE(is_heavy_kind(ProbeKind::Scrape));
}

TEST_CASE("overlap: rows marked as overlapped stay out of the canary's comparison") {
  // The candidate's rows are 40 % slower only while another canary's heavy
  // work ran: with those rows compared it is rejected, with them marked it
  // compares its undisturbed rows and passes.
  Rows cand{kCandidate, 1}, base{kBaseline, 100'000};
  add_perf(cand, 40, Perf{}, 1);
  add_perf(cand, 40, Perf{.ttft_ms = 280}, 3000);
  add_perf(base, 40, Perf{}, 5000);
  JudgeInput in = input_for(StageKind::Canary);
  in.candidate_rows = cand.rows;
  in.baseline_rows = base.rows;
  CHECK(judge_stage(in).state == VerdictState::Rejected);
  for (auto& r : in.candidate_rows)
    if (r.t_first_token_us && *r.t_first_token_us >= 240'000) r.overlapped_heavy = true;
  const VerdictRow v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Promoted);
  const auto* ttft = find_metric(v, "ttft_ms/stream/1k{");
  REQUIRE(ttft);
  CHECK(ttft->n == 40);  // the marked rows are not among the samples
}

TEST_CASE("overlap: a long heavy span marks rows past shorter ones that started after it") {
  // 0..10 s long context, then short bursts at 2 s and 3 s: a row at 8 s
  // overlaps only the first, which started before the others.
  std::vector<ProbeResult> rows = {timed(kCandidate, ProbeKind::Stream, 8'000, 100),
                                   timed(kCandidate, ProbeKind::Stream, 10'500, 100)};
  const std::vector<ProbeResult> others = {timed(kOther, ProbeKind::LongContext, 0, 10'000),
                                           timed(kOther, ProbeKind::Burst, 2'000, 100),
                                           timed(kOther, ProbeKind::Burst, 3'000, 100)};
  CHECK(mark_overlapped_heavy(rows, others) == 1);
  CHECK(rows[0].overlapped_heavy);
  CHECK_FALSE(rows[1].overlapped_heavy);
}

TEST_CASE("overlap: the same rows marked as by comparing every pair") {
  uint64_t x = 12345;
  auto next = [&x](int64_t mod) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(mod));
  };
  const ProbeKind kinds[] = {ProbeKind::LongContext, ProbeKind::Stream, ProbeKind::Burst, ProbeKind::Capacity};
  std::vector<ProbeResult> rows, others;
  for (int i = 0; i < 300; ++i) rows.push_back(timed(kCandidate, ProbeKind::Stream, next(100'000), next(2'000)));
  for (int i = 0; i < 60; ++i)
    others.push_back(timed(next(3) == 0 ? kCandidate : kOther, kinds[next(4)], next(100'000), next(5'000)));
  int64_t expected = 0;
  std::vector<bool> want;
  for (const auto& r : rows) {
    bool hit = false;
    for (const auto& o : others)
      hit = hit || (is_heavy_kind(o.kind) && o.candidate_id != r.candidate_id &&
                    o.started_wall_ms <= r.started_wall_ms + *r.t_done_us / 1'000 &&
                    r.started_wall_ms <= o.started_wall_ms + *o.t_done_us / 1'000);
    want.push_back(hit);
    expected += hit;
  }
  REQUIRE(expected > 10);
  REQUIRE(expected < 290);
  CHECK(mark_overlapped_heavy(rows, others) == expected);
  for (size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].overlapped_heavy == want[i]);
}
