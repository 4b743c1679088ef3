// The report's writers on literal inputs: HTML escaping of every text from the
// store, reasons linked to the rows they cite, SVG output, scales and ticks,
// downsampling, summaries, metric units, and whole pages from a hand-made
// model (no store involved).
#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "reports/charts.h"
#include "reports/html.h"
#include "reports/page.h"
#include "reports/series.h"
#include "reports/svg.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::report;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

const std::string kHostile = "<script>alert('x')</script> & \"q\"";

CandidateReport literal_report() {
  CandidateReport r;
  r.candidate.id = 7;
  r.candidate.name = kHostile;
  r.candidate.model = "qwen<b>";
  r.candidate.runtime = RuntimeKind::LlamaCpp;
  r.candidate.build = "b1\"><img src=x onerror=alert(1)>";
  r.candidate.base_url = "http://127.0.0.1:8080";
  r.generated_ms = 1'767'225'600'000;
  VerdictRow v;
  v.id = 3;
  v.state = VerdictState::Rejected;
  v.stage = "smoke";
  v.reason = "smoke rejected: hard failure, hung_stream: 3 row(s) (53, 78, 111), first <stalled>";
  v.judge_version = "judge-1";
  v.evidence_first_id = 50;
  v.evidence_last_id = 111;
  v.judge_input_json = "{}";
  MetricEvidence m;
  m.metric = "hard/hung_stream";
  m.result = MetricResult::Fail;
  m.n = 3;
  m.reason = "3 row(s) (53, 78, 111) <script>";
  v.metrics.push_back(m);
  r.latest = v;
  r.judged.push_back(JudgedView{v, true, ""});
  r.timeline.from_ms = r.generated_ms;
  r.timeline.to_ms = r.generated_ms + 3'600'000;
  r.timeline.stages.push_back(StageSpan{1, StageKind::Smoke, StageState::Failed, r.generated_ms,
                                        r.generated_ms + 900'000, r.generated_ms + 900'000, r.generated_ms + 1'000'000,
                                        "<reason>"});
  Event gap;
  gap.id = 9;
  gap.wall_ms = r.generated_ms + 600'000;
  gap.duration_ms = 120'000;
  gap.kind = EventKind::Gap;
  gap.detail_json = R"({"cause":"<sleep>"})";
  r.timeline.events.push_back(gap);
  Event e;
  e.id = 9;
  e.wall_ms = r.generated_ms + 600'000;
  e.kind = EventKind::Gap;
  e.detail_json = R"({"cause":"<sleep>"})";
  r.events.push_back(e);
  for (int64_t id : {53, 78}) {
    ProbeResult row;
    row.id = id;
    row.kind = ProbeKind::Agent;
    row.workload_id = "agent/<gate>";
    row.outcome = Outcome::Stalled;
    row.detail = "no content for 120s <after> HTTP 200";
    r.rows.push_back(row);
    r.row_ids.insert(id);
  }
  r.event_ids.insert(9);
  r.notes.push_back("note with <tags> & ampersands");
  return r;
}

}  // namespace

TEST_CASE("escape turns every character that could start markup or end an attribute into an entity") {
  CHECK(escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(escape("plain text, ünïcödé …") == "plain text, ünïcödé …");
  CHECK(escape(std::string("nul\0x\x1b[31m", 10)) == "nul\xEF\xBF\xBDx\xEF\xBF\xBD[31m");
  CHECK(escape("tab\tand\nnewline") == "tab\tand\nnewline");
}

TEST_CASE("a reason's row and event ids link to their table rows; other numbers stay text") {
  const std::set<int64_t> rows{53, 111, 1, 500}, events{5};
  CHECK(linked_reason("hung_stream: 3 row(s) (53, 78, 111), first <x>", rows, events) ==
        "hung_stream: 3 row(s) (<a href=\"#row-53\">53</a>, 78, <a href=\"#row-111\">111</a>), first &lt;x&gt;");
  CHECK(linked_reason("12 of 40 rows (30%); rows 53, 111 and 4 more", rows, events) ==
        "12 of 40 rows (30%); rows <a href=\"#row-53\">53</a>, <a href=\"#row-111\">111</a> and 4 more");
  CHECK(linked_reason("1 trip(s) (events 5, 6)", rows, events) == "1 trip(s) (events <a href=\"#event-5\">5</a>, 6)");
  CHECK(linked_reason("probe rows 1..500", rows, events) ==
        "probe rows <a href=\"#row-1\">1</a>..<a href=\"#row-500\">500</a>");
  CHECK(linked_reason("20 checks pass, 53 had too few samples", rows, events) ==
        "20 checks pass, 53 had too few samples");
  auto ids = cited_ids("3 row(s) (53, 78, 111); (events 7)");
  CHECK(ids.rows == std::set<int64_t>{53, 78, 111});
  CHECK(ids.events == std::set<int64_t>{7});
}

TEST_CASE("numbers, percentages, times and durations as pages print them") {
  CHECK(num(12.3456) == "12.35");
  CHECK(num(21474.8) == "21475");
  CHECK(num(NAN) == "0");
  CHECK(pct(-0.893) == "-89.3%");
  CHECK(iso_utc(1'767'225'600'000) == "2026-01-01T00:00:00Z");
  CHECK(duration_text(2 * 3'600'000 + 5 * 60'000) == "2h 05m");
  CHECK(duration_text(7 * 86'400'000LL + 3'600'000) == "7d 01h");
  CHECK(duration_text(1500) == "1.5s");
}

TEST_CASE("svg: scales, ticks and a writer that escapes and rounds") {
  Scale x{0, 10, 100, 200};
  CHECK(x(5) == Approx(150));
  Scale log{1, 1000, 0, 300, Scale::Kind::Log};
  CHECK(log(10) == Approx(100));
  CHECK(log(0) == Approx(0));  // clamped, never NaN
  auto ticks = nice_ticks(0, 1, 5);
  REQUIRE(ticks.size() == 6);
  for (size_t i = 0; i < ticks.size(); ++i) CHECK(ticks[i] == Approx(0.2 * static_cast<double>(i)).margin(1e-12));
  auto t = nice_ticks(21300, 21700, 4);
  CHECK(t.front() == 21300);
  CHECK(t.back() == 21700);
  CHECK(log_ticks(1, 1000) == std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000});
  auto [lo, hi] = nice_range(3.2, 3.2, 5);
  CHECK(lo < 3.2);
  CHECK(hi > 3.2);
  CHECK(coord(1.04) == "1");
  CHECK(coord(-0.04) == "0");
  CHECK(coord(12.35) == "12.3");

  Svg svg(100, 50, "c<1>", "chart", "a \"label\"");
  svg.rect(10, 10, -5, 5, "r", "tip <b>");
  svg.text(1, 2, "<x>", "t");
  const std::string s = svg.str();
  CHECK(s.find("id=\"c&lt;1&gt;\"") != std::string::npos);
  CHECK(s.find("aria-label=\"a &quot;label&quot;\"") != std::string::npos);
  CHECK(s.find("<rect x=\"5\" y=\"10\" width=\"5\" height=\"5\" class=\"r\"><title>tip &lt;b&gt;</title></rect>") !=
        std::string::npos);
  CHECK(s.find(">&lt;x&gt;</text>") != std::string::npos);
  CHECK(s.compare(s.size() - 6, 6, "</svg>") == 0);
}

TEST_CASE("downsampling keeps each bucket's min, max and median and leaves empty spans out") {
  std::vector<TimedValue> pts;
  for (int i = 0; i < 1000; ++i) pts.push_back({i * 1000, static_cast<double>(i % 10)});
  pts.push_back({500'500, 1e6});  // a spike survives as its bucket's max
  std::reverse(pts.begin(), pts.end());
  auto b = downsample(pts, 0, 999'999, 10);
  REQUIRE(b.size() == 10);
  CHECK(b[0].n == 100);
  CHECK(b[0].min == 0);
  CHECK(b[0].max == 9);
  CHECK(b[0].median == Approx(4.5));
  CHECK(b[5].max == 1e6);
  // A gap: no points in the middle buckets.
  std::vector<TimedValue> gappy{{0, 1}, {100, 2}, {900, 3}};
  auto g = downsample(gappy, 0, 999, 10);
  REQUIRE(g.size() == 3);
  CHECK(g[2].t0_ms == 900);
  CHECK(downsample(pts, 10, 5, 10).empty());
  // Each point lies inside the bucket it is counted in, whatever the span's rounding.
  for (int64_t span : {7, 999, 3'600'000}) {
    for (int buckets : {2, 3, 360}) {
      for (int64_t t = 0; t <= span; t += std::max<int64_t>(1, span / 50)) {
        auto one = downsample({{t, 1}}, 0, span, buckets);
        REQUIRE(one.size() == 1);
        INFO("span " << span << ", " << buckets << " buckets, t " << t);
        CHECK(one[0].t0_ms <= t);
        CHECK((t < one[0].t1_ms || (t == span && one[0].t1_ms == span)));
      }
    }
  }
}

TEST_CASE("summaries use the judge's quantiles; thinning keeps both ends") {
  auto s = summarize({5, 1, 4, 2, 3});
  CHECK(s.n == 5);
  CHECK(s.median == 3);
  CHECK(s.p25 == 2);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.p95 == Approx(4.8));
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(i);
  auto t = thin(v, 11);
  REQUIRE(t.size() == 11);
  CHECK(t.front() == 0);
  CHECK(t.back() == 999);
  CHECK(thin({1, 2}, 5).size() == 2);
}

TEST_CASE("metric rows read in the estimate's unit: a median's shift interval becomes the candidate median's") {
  MetricEvidence ttft;
  ttft.metric = "ttft_ms/agent/gate{cache=shared_prefix}";
  ttft.estimate = 230;
  ttft.baseline = 200;
  ttft.lo = 0.10;  // shift +20 ms
  ttft.hi = 0.20;  // shift +40 ms
  ttft.threshold = 0.10;
  auto t = metric_text(ttft);
  CHECK(t.estimate == "230 ms");
  CHECK(t.baseline == "200 ms");
  CHECK(t.interval == "[220, 240] ms");
  CHECK(t.threshold == "+10.0% effect floor");

  MetricEvidence decode;
  decode.metric = "decode_tps/stream{}";
  decode.estimate = 4;
  decode.baseline = 40;
  decode.lo = -0.92;
  decode.hi = -0.88;
  CHECK(metric_text(decode).interval == "[3.2, 4.8] tok/s");

  MetricEvidence slope;
  slope.metric = "footprint_slope_mb_per_h";
  slope.estimate = 480;
  slope.lo = 470;
  slope.hi = 490;
  slope.threshold = 50;
  auto s = metric_text(slope);
  CHECK(s.estimate == "480 MB/h");
  CHECK(s.interval == "[470, 490] MB/h");

  MetricEvidence drift;
  drift.metric = "decode_drift/agent/soak{}";
  drift.estimate = 36;
  drift.baseline = 40;
  drift.lo = -0.15;
  drift.hi = -0.05;
  CHECK(metric_text(drift).interval == "[34, 38] tok/s");
}

TEST_CASE("a candidate's page escapes every text from the store and links reasons to the rows table") {
  const std::string html = render_candidate(literal_report());
  // Nothing from the store becomes markup: no script element, no injected attribute.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<b>\"") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;") != std::string::npos);
  CHECK(html.find("b1&quot;&gt;&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(html.find("qwen&lt;b&gt;") != std::string::npos);
  CHECK(html.find("&lt;reason&gt;") != std::string::npos);
  CHECK(html.find("{&quot;cause&quot;:&quot;&lt;sleep&gt;&quot;}") != std::string::npos);
  CHECK(html.find("note with &lt;tags&gt; &amp; ampersands") != std::string::npos);
  // Self-contained: no script, nothing fetched.
  CHECK(html.find("http://www.w3.org/2000/svg") != std::string::npos);  // the SVG namespace, not a fetch
  CHECK(std::regex_search(html, std::regex("(src|href)=\"https?:")) == false);
  CHECK(html.find("@import") == std::string::npos);
  // Reasons link to the rows table, which has the anchors.
  CHECK(count(html, "href=\"#row-53\"") >= 2);  // the verdict and the metric row
  CHECK(html.find("<tr id=\"row-53\">") != std::string::npos);
  CHECK(html.find("<tr id=\"row-78\">") != std::string::npos);
  CHECK(html.find("href=\"#row-111\"") == std::string::npos);  // no table line, no link
  CHECK(html.find("<tr id=\"event-9\">") != std::string::npos);
  CHECK(html.find("href=\"#event-9\"") != std::string::npos);  // the gap on the timeline
  CHECK(html.find("id=\"timeline-chart\"") != std::string::npos);
  CHECK(html.find("class=\"gap\"") != std::string::npos);
  CHECK(html.find("Recomputed from the stored rows: identical.") != std::string::npos);
  // The verdict heads the page; its full argument (every metric) follows the charts.
  const size_t verdict = html.find("<section id=\"verdict\">"), charts = html.find("id=\"timeline-chart\""),
               argument = html.find("<section id=\"argument\">"), metric = html.find(">hard/hung_stream<");
  REQUIRE(verdict != std::string::npos);
  REQUIRE(argument != std::string::npos);
  CHECK(verdict < charts);
  CHECK(charts < argument);
  CHECK(argument < metric);
}

TEST_CASE("the memory chart draws the trend from the judge's fit, its interval as a fan through the centre") {
  MemoryChart m;
  m.stage = "soak";
  m.from_ms = 0;
  m.to_ms = 10 * 3'600'000;
  for (int i = 0; i < 10; ++i)
    m.footprint.push_back(
        Bucket{i * 3'600'000, (i + 1) * 3'600'000, 1e9 + i * 1e8, 1e9 + i * 1e8 + 5e6, 1e9 + i * 1e8 + 2e6, 10});
  TrendView t;
  t.t0_ms = 0;
  t.slope = 100;
  t.lo = 90;
  t.hi = 110;
  t.intercept = 1000;
  t.bound = 50;
  t.confidence = 0.99;
  t.block_x_h = {0.5, 1.5, 2.5};
  t.block_y_mb = {1050, 1150, 1250};
  t.samples = 30;
  t.source = "footprint";
  m.trend = t;
  const std::string s = memory_svg(m);
  CHECK(s.find("id=\"memory\"") != std::string::npos);
  CHECK(s.find("class=\"trend line\"") != std::string::npos);
  CHECK(s.find("class=\"trend-interval\"") != std::string::npos);
  CHECK(count(s, "class=\"block\"") == 3);
  CHECK(s.find("Theil–Sen 100 MB/h [90, 110] MB/h, bound 50 MB/h") != std::string::npos);
  CHECK(s.find("footprint band") != std::string::npos);
  m.trend.reset();
  CHECK(memory_svg(m).find("trend line") == std::string::npos);
}

TEST_CASE("perf, ladder and burst charts: one row per locator, fresh beside repeat, serialized bursts named") {
  PerfGroup g;
  g.metric = "decode_tps/stream{}";
  g.figure = "decode_tps";
  g.workload = "stream";
  g.cand = summarize({3.8, 4, 4.2});
  g.base = summarize({39, 40, 41});
  g.cand_points = {3.8, 4, 4.2};
  g.base_points = {39, 40, 41};
  MetricEvidence e;
  e.result = MetricResult::Fail;
  g.evidence = e;
  PerfGroup h = g;
  h.workload = "marker";
  h.evidence.reset();
  h.base = Summary{};
  h.base_points.clear();
  const std::string s = perf_svg("decode_tps", {&g, &h});
  CHECK(s.find("id=\"perf-decode_tps\"") != std::string::npos);
  CHECK(count(s, "class=\"perf-row") == 2);
  CHECK(s.find("perf-row result-fail") != std::string::npos);
  CHECK(count(s, "class=\"pt cand\"") == 6);
  CHECK(count(s, "class=\"pt base\"") == 3);
  CHECK(s.find("no baseline rows") != std::string::npos);

  std::vector<LadderPoint> ladder{{1024, CacheState::Fresh, summarize({2600, 2700}), 2, 0},
                                  {1024, CacheState::Repeat, summarize({150, 160}), 2, 0},
                                  {131072, CacheState::Fresh, Summary{}, 2, 2}};
  const std::string l = ladder_svg(ladder, 1024);
  CHECK(l.find("id=\"ladder\"") != std::string::npos);
  CHECK(l.find("fresh box") != std::string::npos);
  CHECK(l.find("repeat box") != std::string::npos);
  CHECK(l.find("✕ 2/2 refused") != std::string::npos);
  CHECK(l.find("context reach: 1024 tokens") != std::string::npos);

  std::vector<BurstPoint> bursts{{1, summarize({100, 110}), 2, 0, 1.0}, {4, summarize({100, 400}), 2, 2, 1.0}};
  const std::string b = bursts_svg(bursts);
  CHECK(b.find("id=\"bursts\"") != std::string::npos);
  CHECK(b.find("2/2 serialized, peak 1/4 decoding") != std::string::npos);
}

TEST_CASE("the index lists every candidate with its verdict and a small timeline, escaped") {
  IndexReport idx;
  idx.generated_ms = 1'767'225'600'000;
  IndexEntry e;
  e.status.candidate.name = kHostile;
  e.status.candidate.build = "b1";
  VerdictRow v;
  v.state = VerdictState::Promoted;
  v.reason = "soak passed <ok>";
  e.status.verdict = v;
  e.timeline.from_ms = idx.generated_ms;
  e.timeline.to_ms = idx.generated_ms + 1000;
  idx.entries.push_back(e);
  idx.entries.push_back(e);
  const std::string html = render_index(idx);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(count(html, "class=\"chart timeline mini\"") == 2);
  CHECK(html.find("id=\"mini-1\"") != std::string::npos);
  CHECK(html.find("soak passed &lt;ok&gt;") != std::string::npos);
  CHECK(html.find("v-promoted") != std::string::npos);
}

TEST_CASE("host pressure: a sample's level lasts until the next one, a gap in the samples stays a gap") {
  // Samples every 5 minutes over an hour (fewer than the chart's buckets), and none from 0:30 to 0:50.
  PressureChart p;
  p.from_ms = 0;
  p.to_ms = 3'600'000;
  std::vector<TimedValue> level;
  for (int64_t t = 0; t < p.to_ms; t += 300'000)
    if (t < 1'800'000 || t >= 3'000'000) level.push_back({t, t == 600'000 ? 4.0 : 1.0});
  p.level = downsample(level, p.from_ms, p.to_ms, kTimeBuckets);
  const std::string svg = pressure_svg(p);
  static const std::regex rect(R"re(<rect x="([0-9.]+)" y="12" width="([0-9.]+)" height="20" class="level (\w+)")re");
  double covered = 0;
  int critical = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect), end; it != end; ++it) {
    covered += std::stod((*it)[2]);
    critical += (*it)[3] == "critical";
  }
  const double plot = 960 - 72 - 16, five_minutes = plot / 12;
  CHECK(critical == 1);
  // 6 samples before the gap and 2 after hold 5 minutes each: 8 of the hour's 12 slots, not slivers.
  CHECK(covered == Approx(8 * five_minutes).margin(1));
}
