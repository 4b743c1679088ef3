// Answers judged for what they say, through the fake runtime on 127.0.0.1
// (probes/answer_check.h, judges/answers.cc, judges/hard.cc): leaked markup
// (each of the markup-leak scenario's leaks, across flavours) fails the
// answers that carry it and rejects the canary, a healthy thinking answer
// stays clean; an empty answer and a
// reasoning-only one fail every probe that expects text, the long-context
// answer carries its code word, a build answering half as long as its baseline
// is rejected, a loop in the soak's agent traffic is caught with its figure on
// the row. The probes run as the stages' tasks run them; judge_stage() gets the
// rows as the daemon would hand them over.
#include <nlohmann/json.hpp>

#include "judges/judge.h"
#include "schedules/plan.h"
#include "tests/catch.h"
#include "tests/fake_runtime/fake_runtime.h"
#include "tests/integration/probe_harness.h"

using namespace soak;
using namespace soak::probe_test;
using fake::FakeRuntime;
using fake::ListenerConfig;
using fake::Scenario;

namespace {

constexpr int64_t kCandidateId = 1;
constexpr int64_t kBaselineId = 2;
constexpr int64_t kHostId = 1;
constexpr int64_t kHourMs = 3'600'000;

ListenerConfig quick(Scenario s) {
  ListenerConfig c = ListenerConfig::make(s);
  c.knobs.token_interval_ms = 1;
  c.knobs.prefill_ms_per_1k = 1;
  return c;
}

struct Fake {
  explicit Fake(ListenerConfig cfg) : rt({std::move(cfg)}) { REQUIRE(rt.start().ok()); }
  std::string url() const { return rt.base_url(0); }
  FakeRuntime rt;
};

// Rows of `passes` runs of each task, labelled as one candidate's.
std::vector<ProbeResult> task_rows(const CandidateConfig& c, const std::vector<TaskKind>& tasks, int passes,
                                   int64_t candidate_id, int64_t first_id = 1) {
  Harness h;
  std::vector<ProbeResult> rows;
  int64_t id = first_id;
  for (int i = 0; i < passes; ++i)
    for (TaskKind t : tasks)
      for (auto& r : h.run(c, probe_kinds_for(t))) {
        r.id = id++;
        r.candidate_id = candidate_id;
        r.host_id = kHostId;
        r.started_wall_ms += i;  // keeps the order of passes
        rows.push_back(std::move(r));
      }
  return rows;
}

JudgeInput input(StageKind stage, const CandidateConfig& c, std::vector<ProbeResult> rows) {
  JudgeInput in;
  in.recipe.stage = stage;
  in.recipe.candidate_id = kCandidateId;
  in.recipe.host_id = kHostId;
  in.recipe.slots_planned = 1;
  in.recipe.slots_run = 1;
  in.recipe.judge = c.settings.judge;
  in.recipe.gate = c.settings.gate;
  in.recipe.agent = c.settings.agent;
  in.smoke_required = probe_kinds_for(TaskKind::Smoke);
  in.candidate_rows = std::move(rows);
  if (stage == StageKind::Soak) {
    for (int64_t i = 0; i < 7 * 24; ++i) {
      ProcessSample p;
      p.id = i + 1;
      p.host_id = kHostId;
      p.candidate_id = kCandidateId;
      p.wall_ms = i * kHourMs;
      p.pid = 4242;
      p.name = "llama-server";
      p.start_time = 1;
      p.footprint_bytes = 1LL << 30;
      in.process_samples.push_back(p);
    }
  }
  return in;
}

const MetricEvidence* metric(const VerdictRow& v, const std::string& prefix) {
  for (const auto& m : v.metrics)
    if (m.metric.rfind(prefix, 0) == 0) return &m;
  return nullptr;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("an empty answer fails every probe that expects text, and the smoke") {
  Fake f(quick(Scenario::EmptyContent));
  const CandidateConfig c = candidate(f.url());
  auto rows = task_rows(c, {TaskKind::Smoke, TaskKind::LongContext}, 1, kCandidateId);
  INFO(describe(rows));
  for (ProbeKind k : {ProbeKind::Identity, ProbeKind::Marker, ProbeKind::Stream, ProbeKind::StrictJson}) {
    INFO(to_string(k));
    const ProbeResult* r = find_row(rows, k);
    REQUIRE(r);
    CHECK(r->outcome == Outcome::EmptyAnswer);
    CHECK(has(r->detail, "no answer content and no tool call (finish_reason stop)"));
    REQUIRE(r->completion_tokens);  // finish_reason and usage came: the contract alone passed it
  }
  const ProbeResult* lc = find_row(rows, ProbeKind::LongContext, "long_context/1024/fresh");
  REQUIRE(lc);
  CHECK(lc->outcome == Outcome::EmptyAnswer);
  // A tool call is an answer without text.
  CHECK(find_row(rows, ProbeKind::ToolCall)->outcome == Outcome::Clean);

  auto v = judge_stage(input(StageKind::Smoke, c, rows));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  CHECK(has(v.reason, "empty_answer"));
}

TEST_CASE("reasoning alone is not an answer: identity and stream rows fail") {
  Fake f(quick(Scenario::ReasoningOnly));
  const CandidateConfig c = candidate(f.url());
  auto rows = task_rows(c, {TaskKind::Smoke}, 1, kCandidateId);
  INFO(describe(rows));
  for (ProbeKind k : {ProbeKind::Identity, ProbeKind::Stream}) {
    const ProbeResult* r = find_row(rows, k);
    REQUIRE(r);
    CHECK(r->outcome == Outcome::EmptyAnswer);
    CHECK(has(r->detail, "came as reasoning, which is not an answer"));
    if (k == ProbeKind::Stream) CHECK(r->reasoning_events > 0);
  }
  auto v = judge_stage(input(StageKind::Smoke, c, rows));
  CHECK(v.state == VerdictState::Rejected);
}

TEST_CASE("a healthy runtime: every answer clean, the code word found, the loop figure on every row") {
  Fake f(quick(Scenario::Healthy));
  CandidateConfig c = candidate(f.url());
  c.settings.long_context_sizes = {1024, 2048};
  auto rows = task_rows(c, {TaskKind::Smoke, TaskKind::LongContext, TaskKind::Burst}, 1, kCandidateId);
  INFO(describe(rows));
  int answers = 0;
  for (const auto& r : rows) {
    if (r.kind == ProbeKind::Health || r.workload_id.find("/summary") != std::string::npos) continue;
    CHECK(r.outcome == Outcome::Clean);
    if (r.kind == ProbeKind::Identity) continue;  // its row carries the proof, not the answer's figure
    auto j = nlohmann::json::parse(r.extra_json);
    CHECK(j.contains("loop_run_chars"));
    if (r.kind != ProbeKind::ToolCall) CHECK(j["loop_tail_chars"].get<int64_t>() > 0);  // a call has no text
    ++answers;
  }
  CHECK(answers >= 8);
  auto lc = nlohmann::json::parse(find_row(rows, ProbeKind::LongContext, "long_context/2048/fresh")->extra_json);
  CHECK(lc["marker_found"] == true);
  CHECK(lc["sized_by"] == "tokenize");  // the probe's own figures are kept beside the loop figure
}

TEST_CASE("a build answering under half as long as its baseline is rejected by the canary, though faster") {
  ListenerConfig base_cfg = quick(Scenario::Healthy);
  ListenerConfig cand_cfg = quick(Scenario::Healthy);
  cand_cfg.knobs.reply_tokens = 12;  // the baseline answers 32 tokens (S4:271: under 0.5x)
  Fake base(base_cfg);
  Fake cand(cand_cfg);
  const std::vector<TaskKind> canary = {TaskKind::Scrape, TaskKind::Functional, TaskKind::Burst};
  auto in = input(StageKind::Canary, candidate(cand.url()), task_rows(candidate(cand.url()), canary, 3, kCandidateId));
  in.recipe.baseline_mode = BaselineMode::Interleaved;
  in.recipe.baseline_id = kBaselineId;
  in.baseline_rows = task_rows(candidate(base.url()), canary, 3, kBaselineId, 10'000);
  auto v = judge_stage(in);
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* m = metric(v, "completion_length/stream{");
  REQUIRE(m);
  CHECK(m->result == MetricResult::Fail);
  CHECK(has(m->reason, "median completion 12 tokens against the baseline's 32 (0.38x)"));
  CHECK(has(m->reason, "S4:271"));
  CHECK(m->n == 3);

  SECTION("the same answers on both sides pass the rule") {
    in.candidate_rows = task_rows(candidate(base.url()), canary, 3, kCandidateId);
    auto same = judge_stage(in);
    INFO(same.reason);
    CHECK(metric(same, "completion_length")->result == MetricResult::Pass);
    CHECK(metric(same, "completion_length/") == nullptr);
  }
}

TEST_CASE("a loop in the soak's agent traffic is caught, with its figure on the row") {
  Fake f(quick(Scenario::RepetitionLoop));
  CandidateConfig c = candidate(f.url());
  c.settings.agent.context_ceiling_tokens = 12'000;
  c.settings.agent.band_tokens = 3'000;
  auto rows = task_rows(c, {TaskKind::Agent}, 3, kCandidateId);
  INFO(describe(rows));
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) {
    CHECK(r.kind == ProbeKind::Agent);
    CHECK(r.outcome == Outcome::Repetition);  // not server_token_cap: a loop is a loop whatever stopped it
    CHECK(has(r.detail, "-byte unit"));
    auto j = nlohmann::json::parse(r.extra_json);
    CHECK(j["loop_run_chars"].get<int64_t>() >= 256);
    CHECK(j.contains("session"));  // the session's own fields beside it
    CHECK(j.contains("band"));
  }
  auto v = judge_stage(input(StageKind::Soak, c, rows));
  INFO(v.reason);
  CHECK(v.state == VerdictState::Rejected);
  const auto* loops = metric(v, "answers/loops");
  REQUIRE(loops);
  CHECK(loops->result == MetricResult::Fail);
  CHECK(has(loops->reason, "3 of 3 answers ended in a loop"));
}

// ---------------------------------------------------------------- hygiene

namespace {

ListenerConfig leaking(const std::string& leak, fake::Flavour flavour = fake::Flavour::LlamaCpp) {
  ListenerConfig c = ListenerConfig::make(Scenario::MarkupLeak, flavour);
  c.knobs.token_interval_ms = 1;
  c.knobs.prefill_ms_per_1k = 1;
  c.knobs.leak = leak;
  return c;
}

}  // namespace

TEST_CASE("leaked markup fails every answer whose content carries it, for each leak and flavour") {
  struct Case {
    const char* leak;
    fake::Flavour flavour;
    RuntimeKind runtime;
    const char* found;    // how the detail starts
    const char* excerpt;  // what the excerpt shows of it
  };
  for (const Case& k : {
           Case{"think", fake::Flavour::LlamaCpp, RuntimeKind::LlamaCpp, "reasoning markup <think> at char 0 of ",
                "<think>\\n"},
           Case{"think", fake::Flavour::MlxLm, RuntimeKind::MlxLm, "reasoning markup <think> at char 0 of ",
                "<think>\\n"},
           Case{"im-end", fake::Flavour::LlamaCpp, RuntimeKind::LlamaCpp, "chat-template token <|im_end|> at char ",
                "<|im_end|>"},
           Case{"im-end", fake::Flavour::Vllm, RuntimeKind::Vllm, "chat-template token <|im_end|> at char ",
                "<|im_end|>"},
           Case{"harmony", fake::Flavour::Ollama, RuntimeKind::Ollama, "harmony header <|channel|> at char 0 of ",
                "<|channel|>"},
           Case{"fffd", fake::Flavour::Omlx, RuntimeKind::Omlx, "U+FFFD (replacement character) at char ", "\\uFFFD"},
       }) {
    DYNAMIC_SECTION(k.leak << " on " << to_string(k.flavour)) {
      Fake f(leaking(k.leak, k.flavour));
      const CandidateConfig c = candidate(f.url(), k.runtime);
      auto rows = task_rows(c, {TaskKind::Functional}, 1, kCandidateId);
      INFO(describe(rows));
      int leaked = 0;
      for (const auto& r : rows) {
        INFO(to_string(r.kind) << " " << r.workload_id << ": " << r.detail);
        if (r.kind == ProbeKind::ToolCall) {
          CHECK(r.outcome == Outcome::Clean);  // a call carries no content to leak into
          continue;
        }
        REQUIRE(r.outcome == Outcome::LeakedMarkup);
        CHECK(r.detail.rfind(k.found, 0) == 0);
        CHECK(has(r.detail, " in the answer content"));
        CHECK(has(r.excerpt, k.excerpt));
        ++leaked;
      }
      CHECK(leaked == 6);  // marker, stream, strict JSON, thinking on and off, repetition
      if (std::string(k.leak) == "think") {
        // The think block before the JSON document broke it too: named, not decisive.
        CHECK(has(find_row(rows, ProbeKind::StrictJson)->detail, "; the answer was also invalid_json"));
      }
    }
  }
}

TEST_CASE("leaked markup wins over the runtime's own cap, which its detail names") {
  // MLX-LM caps an answer at 512 tokens when the request sends no max_tokens:
  // a 600-token answer is cut (server_token_cap), its think block kept.
  ListenerConfig cfg = leaking("think", fake::Flavour::MlxLm);
  cfg.knobs.reply_tokens = 600;
  Fake f(cfg);
  auto rows = task_rows(candidate(f.url(), RuntimeKind::MlxLm), {TaskKind::Functional}, 1, kCandidateId);
  const ProbeResult* stream = find_row(rows, ProbeKind::Stream);
  REQUIRE(stream);
  INFO(stream->detail);
  CHECK(stream->finish_reason == "length");
  CHECK(stream->outcome == Outcome::LeakedMarkup);
  CHECK(has(stream->detail, "; the runtime's own cap also cut it (server_token_cap)"));
}

TEST_CASE("the end-of-turn token llama.cpp's /props names is read on top of the fixed lists") {
  // A model family whose EOS no fixed list holds (Llama 2 and Mistral's </s>):
  // found once soakd has read /props, the preamble of a candidate's first run
  // when its config does not give the slots.
  ListenerConfig cfg = leaking("eos");
  cfg.knobs.eos_token = "</s>";
  Fake f(cfg);
  CandidateConfig c = candidate(f.url());
  auto rows = task_rows(c, {TaskKind::Functional}, 1, kCandidateId);
  INFO(describe(rows));
  const ProbeResult* marker = find_row(rows, ProbeKind::Marker);
  REQUIRE(marker);
  CHECK(marker->outcome == Outcome::LeakedMarkup);
  CHECK(marker->detail.rfind("the template's own token </s> at char ", 0) == 0);
  CHECK(has(marker->excerpt, "</s>"));
  // Given the slots, soakd does not ask /props before the first run: only the fixed lists are read.
  c.slots = 2;
  auto unread = task_rows(c, {TaskKind::Functional}, 1, kCandidateId);
  CHECK(find_row(unread, ProbeKind::Marker)->outcome == Outcome::Clean);
}

TEST_CASE("a canary whose answers leak is rejected on leaked_markup; a healthy one against the same baseline is not") {
  Fake base(quick(Scenario::Healthy));
  const std::vector<TaskKind> canary = {TaskKind::Scrape, TaskKind::Functional, TaskKind::Burst};
  const auto baseline = task_rows(candidate(base.url()), canary, 3, kBaselineId, 10'000);
  auto judged = [&](const std::vector<ProbeResult>& rows, const CandidateConfig& c) {
    auto in = input(StageKind::Canary, c, rows);
    in.recipe.baseline_mode = BaselineMode::Interleaved;
    in.recipe.baseline_id = kBaselineId;
    in.baseline_rows = baseline;
    return std::make_pair(judge_stage(in), judge_hard_failures(in));
  };

  for (const char* leak : {"think", "im-end"}) {
    DYNAMIC_SECTION(leak) {
      Fake f(leaking(leak));
      const CandidateConfig c = candidate(f.url());
      const auto [v, early] = judged(task_rows(c, canary, 3, kCandidateId), c);
      INFO(v.reason);
      CHECK(v.state == VerdictState::Rejected);
      CHECK(v.reason.rfind("canary rejected: hard failure, leaked_markup beyond tolerance: ", 0) == 0);
      CHECK(has(v.reason, "; excerpt: "));
      const auto* m = metric(v, "hard/leaked_markup");
      REQUIRE(m);
      CHECK(m->result == MetricResult::Fail);
      // Every answer with text leaked; the tool calls and the bursts' answers were read too.
      CHECK(m->estimate > 0.5);
      // The interim check after a task rejects on the same rows.
      REQUIRE(early);
      CHECK(early->state == VerdictState::Rejected);
      CHECK(has(early->reason, "leaked_markup"));
    }
  }
  SECTION("healthy: the reasoning in reasoning_content, every answer clean") {
    Fake f(quick(Scenario::Healthy));
    const CandidateConfig c = candidate(f.url());
    const auto rows = task_rows(c, canary, 3, kCandidateId);
    const ProbeResult* thought = find_row(rows, ProbeKind::Thinking, "thinking/on");
    REQUIRE(thought);
    CHECK(thought->outcome == Outcome::Clean);
    CHECK(thought->reasoning_events > 0);
    const auto [v, early] = judged(rows, c);
    INFO(v.reason);
    CHECK(v.state != VerdictState::Rejected);
    CHECK(metric(v, "hard/leaked_markup") == nullptr);
    CHECK_FALSE(early);
  }
}
